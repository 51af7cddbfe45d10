"""Payout processing: the job enqueued after an approval commits, and the periodic sweep.

Only one sender works on a payout at a time: `start_processing` hands it to whoever moves it
to PROCESSING (or to the sweep, once its sender has been silent for a while). The provider
call is idempotent by the payout id, and each ledger posting is unique per payout, so a job
that runs twice, or a sweep racing a job, never pays or refunds twice.
"""

import logging

from app.extensions import db
from app.jobs import sweep
from app.services.payouts import processing

log = logging.getLogger(__name__)


def process_payout(payout_id: str) -> str | None:
    """Send one approved payout through its provider; returns the status it ends in, or None
    when another sender has it or nothing is left to send."""
    payout = processing.start_processing(payout_id)
    db.session.commit()
    if payout is None:
        return None
    processing.send(payout)
    db.session.commit()
    return str(payout.status)


def sweep_payouts() -> int:
    """Process approvals whose job never ran (Redis was down) and payouts stuck mid-way; one
    payout's failure (a provider outage) never holds up the others."""
    due = processing.due_for_processing()
    sweep(due, process_payout, log=log, failure="payout processing failed; retried later")
    return len(due)
