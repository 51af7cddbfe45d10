"""Crediting a paid transaction, whatever the method: one posting, fees booked apart.

Pix settlements (`pix_payments`) and the other methods (`payments.settle`) both end here, so
a paid transaction is credited the same way: the net amount lands in the wallet's pending
balance, released to available on the settlement schedule (`releases`).
"""

import logging
from datetime import datetime

from app.models import LedgerAccount, Transaction, TransactionStatus
from app.providers import provider_named
from app.providers.base import PaymentProvider, ProviderError
from app.services import fees, ledger, releases
from app.services.ledger import Line
from app.services.transactions import lifecycle

log = logging.getLogger(__name__)

SETTLEMENT = "charge_settlement"


def credit(
    transaction: Transaction,
    *,
    method: str,
    amount: int,
    paid_at: datetime,
    description: str,
    status: TransactionStatus = TransactionStatus.PAID,
) -> None:
    """Record the payment on the locked transaction, book it and move it to `status`; the
    other methods' instructions are withdrawn so the payer cannot pay twice."""
    charge_fees = fees.charge_fees(method, amount)
    transaction.paid_with = method
    transaction.provider_fee = charge_fees.provider
    transaction.platform_fee = charge_fees.platform
    transaction.paid_at = paid_at
    net = amount - charge_fees.total
    ledger.post(
        account_id=transaction.account_id,
        mode=transaction.mode,
        currency=transaction.currency,
        kind=SETTLEMENT,
        reference_id=transaction.id,
        description=description,
        lines=[
            Line(LedgerAccount.PROVIDER_CLEARING, -amount),
            Line(LedgerAccount.PENDING, net),
            Line(LedgerAccount.PROVIDER_FEES, charge_fees.provider),
            Line(LedgerAccount.PLATFORM_FEES, charge_fees.platform),
        ],
    )
    wallet = ledger.locked_wallet(transaction.account_id, transaction.mode, transaction.currency)
    releases.schedule(wallet, transaction.id, net, paid_at)
    lifecycle.transition(transaction, status)
    provider = provider_named(transaction.provider, transaction.mode)
    try:
        withdraw_instructions(transaction, provider, keep=method)
    except ProviderError:  # the payment stands either way; logged for operations to follow up
        log.warning("instructions not withdrawn", extra={"id": transaction.id})


def withdraw_instructions(
    transaction: Transaction, provider: PaymentProvider, keep: str | None = None
) -> None:
    """Withdraw every method's instructions issued for the transaction (but `keep`'s) at
    the provider, so a payer can no longer pay them."""
    for method, reference in transaction.provider_references.items():
        if method != keep:
            provider.cancel_payment(method, reference)
