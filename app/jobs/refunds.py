"""Refunds at the provider: the job that submits a refund right after its request commits,
and the periodic job that funds refunds waiting for money, submits stragglers and polls the
ones in progress until they end.
Each step locks the refund and acts only on the status it expects, so reruns are harmless.
"""

import logging

from app.extensions import db
from app.jobs import sweep
from app.models import RefundStatus
from app.services.transactions import refund_funding, refund_submission

log = logging.getLogger(__name__)


def submit_refund(refund_id: str) -> str | None:
    """Hand one refund to its provider; returns the status it ends in."""
    refund = refund_submission.submit(refund_id)
    db.session.commit()
    return str(refund.status) if refund else None


def poll_refunds() -> int:
    """Fund the refunds waiting for money that now can be, then advance every refund that
    is due; one failure never holds up the others. Each step commits on its own: a status
    poll that fails keeps the submission just made (its provider reference) instead of
    rolling it back with it."""
    sweep(
        refund_funding.waiting_refunds(),
        refund_funding.fund,
        log=log,
        failure="refund funding failed; retried later",
    )
    due = refund_submission.due_refunds()
    sweep(due, _submit_then_poll, log=log, failure="refund polling failed; retried later")
    return len(due)


def _submit_then_poll(refund_id: str) -> None:
    """Submit the refund (if still due), then poll it once it is in progress."""
    refund = refund_submission.submit(refund_id)
    db.session.commit()
    if refund is not None and refund.status is RefundStatus.IN_PROGRESS:
        refund_submission.poll(refund_id)
