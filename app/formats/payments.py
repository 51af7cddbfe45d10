"""The transaction wire format's event data (legacy `payment.*` family)."""

from datetime import datetime

from app.formats.charges import charge_id
from app.models import Origin, Transaction, TransactionStatus

SETTLED = frozenset({TransactionStatus.PAID, TransactionStatus.APPROVED})


def transaction_id(transaction: Transaction) -> str:
    """The id the merchant got at creation: `ch_…` from /v1/charges, the raw id from payments."""
    if transaction.origin is Origin.CHARGES:
        return charge_id(transaction)
    return transaction.id


def payment_event_data(
    transaction: Transaction, previous_status: TransactionStatus | None, occurred_at: datetime
) -> dict:
    data = {
        "transactionId": transaction_id(transaction),
        "amount": transaction.amount,
        "status": str(transaction.status),
        "previousStatus": str(previous_status) if previous_status else None,
        "occurredAt": occurred_at.isoformat(),
    }
    if transaction.status in SETTLED:
        data |= {
            "paidWith": transaction.paid_with,
            "providerFee": transaction.provider_fee,
            "platformFee": transaction.platform_fee,
            "netAmount": transaction.net_amount,
        }
    return data
