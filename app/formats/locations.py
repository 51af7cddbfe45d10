"""The payload behind a dynamic BR Code's location, in the API Pix `cob` vocabulary.

A payer's bank reads it to learn what to pay: txid, amount, expiry, receiver and status.
In a dynamic code this payload is authoritative over the BR Code's own fields.
"""

from datetime import date

from app.models import Account, Transaction, TransactionStatus
from app.pix import due
from app.pix.brcode import format_amount
from app.pix.documents import tax_id_kind

ACTIVE = "ATIVA"
COMPLETED = "CONCLUIDA"
REMOVED_BY_PSP = "REMOVIDA_PELO_PSP"

_COB_STATUS = {
    TransactionStatus.PENDING: ACTIVE,
    TransactionStatus.WAITING_PAYMENT: ACTIVE,
    TransactionStatus.PROCESSING: COMPLETED,
    TransactionStatus.PAID: COMPLETED,
    TransactionStatus.APPROVED: COMPLETED,
    TransactionStatus.REFUNDED: COMPLETED,
    TransactionStatus.CHARGEBACK: COMPLETED,
    TransactionStatus.DISPUTE: COMPLETED,
}


def cob_status(status: TransactionStatus) -> str:
    """Paid in any way → CONCLUIDA; awaiting → ATIVA; expired, cancelled, failed → removed."""
    return _COB_STATUS.get(status, REMOVED_BY_PSP)


def location_payload(charge: Transaction, merchant: Account, day: date) -> dict:
    """`cob` for an immediate charge; `cobv`, its amounts for `day`, for one with a due date."""
    breakdown = due.charge_amount_due(charge, day)
    if breakdown is None:
        calendar = {"expiracao": charge.expires_in}
        value = {"original": format_amount(charge.amount)}
        debtor = {}
    else:
        terms = due.from_json(charge.due_terms)
        calendar = {
            "dataDeVencimento": terms.date.isoformat(),
            "validadeAposVencimento": terms.days_valid_after,
        }
        parts = {
            "multa": breakdown.fine,
            "juros": breakdown.interest,
            "abatimento": breakdown.rebate,
            "desconto": breakdown.discount,
        }
        value = {
            "original": format_amount(breakdown.original),
            **{name: format_amount(amount) for name, amount in parts.items() if amount},
            "final": format_amount(breakdown.total),
        }
        kind = tax_id_kind(charge.customer_document).lower()
        debtor = {"devedor": {kind: charge.customer_document, "nome": charge.customer_name}}
    return {
        "txid": charge.pix_txid,
        "revisao": 0,
        "status": cob_status(charge.status),
        "calendario": {
            "criacao": charge.created_at.isoformat(),
            "apresentacao": charge.created_at.isoformat(),
            **calendar,
        },
        **debtor,
        "valor": value,
        "recebedor": {"nome": merchant.name, "cidade": merchant.city},
    }
