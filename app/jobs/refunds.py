"""Refunds at the provider: the job that submits a refund right after its request commits,
and the periodic job that funds refunds waiting for money, submits stragglers and polls the
ones in progress until they end.
Each step locks the refund and acts only on the status it expects, so reruns are harmless.
"""

import logging

from app.extensions import db
from app.models import RefundStatus
from app.services import refunds

log = logging.getLogger(__name__)


def submit_refund(refund_id: str) -> str | None:
    """Hand one refund to its provider; returns the status it ends in."""
    refund = refunds.submit(refund_id)
    db.session.commit()
    return str(refund.status) if refund else None


def poll_refunds() -> int:
    """Fund the refunds waiting for money that now can be, then advance every refund that
    is due; one failure never holds up the others. Each step commits on its own: a status
    poll that fails keeps the submission just made (its provider reference) instead of
    rolling it back with it."""
    for refund_id in refunds.waiting_refunds():
        try:
            refunds.fund(refund_id)
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception("refund funding failed; retried later", extra={"id": refund_id})
    due = refunds.due_refunds()
    for refund_id in due:
        try:
            refund = refunds.submit(refund_id)
            db.session.commit()
            if refund is not None and refund.status is RefundStatus.IN_PROGRESS:
                refunds.poll(refund_id)
                db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception("refund polling failed; retried later", extra={"id": refund_id})
    return len(due)
