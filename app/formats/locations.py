"""The payload behind a dynamic BR Code's location, in the API Pix `cob` vocabulary.

A payer's bank reads it to learn what to pay: txid, amount, expiry, receiver and status.
In a dynamic code this payload is authoritative over the BR Code's own fields.
"""

from app.models import Account, Transaction, TransactionStatus
from app.pix.brcode import format_amount

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


def location_payload(charge: Transaction, merchant: Account) -> dict:
    return {
        "txid": charge.pix_txid,
        "revisao": 0,
        "status": cob_status(charge.status),
        "calendario": {
            "criacao": charge.created_at.isoformat(),
            "apresentacao": charge.created_at.isoformat(),
            "expiracao": charge.expires_in,
        },
        "valor": {"original": format_amount(charge.amount)},
        "recebedor": {"nome": merchant.name, "cidade": merchant.city},
    }
