"""Payout processing: the job enqueued after an approval commits, and the periodic sweep.

Safe to run twice: the row is locked and its status re-checked at each step, the provider
call is idempotent by the payout id, and each ledger posting is unique per payout.
"""

from app.extensions import db
from app.services import payouts


def process_payout(withdrawal_id: str) -> str | None:
    """Send one approved payout through its provider; returns the status it ends in."""
    withdrawal = payouts.start_processing(withdrawal_id)
    db.session.commit()
    if withdrawal is None:
        return None
    payouts.send(withdrawal)
    db.session.commit()
    return str(withdrawal.status)


def sweep_payouts() -> int:
    """Process approvals whose job never ran (Redis was down) and payouts stuck mid-way."""
    due = payouts.due_for_processing()
    for withdrawal_id in due:
        process_payout(withdrawal_id)
    return len(due)
