"""Payment finalisation: the job enqueued when a payment is created, and the sweep that
finalises any whose job never ran (Redis was down at the commit). Finalising is a no-op
for anything no longer PENDING, so a job that runs twice, or races the sweep, is harmless.
"""

import logging

from app.extensions import db
from app.services import payments

log = logging.getLogger(__name__)


def finalise_payment(transaction_id: str) -> str:
    """Ask the provider for the payment's instructions; returns the status it ends in."""
    payment = payments.finalise(transaction_id)
    db.session.commit()
    return str(payment.status)


def sweep_payments() -> int:
    """Finalise payments left PENDING past their job; one failure never holds up the rest."""
    due = payments.unfinalised()
    for transaction_id in due:
        try:
            finalise_payment(transaction_id)
        except Exception:
            db.session.rollback()
            log.exception(
                "payment finalisation failed; retried later", extra={"id": transaction_id}
            )
    return len(due)
