"""Dispute e-mails: the job each opening or resolution asks for after it commits, and the
periodic sweep that sends any notice still due (Redis was down, the mail server failed)."""

import logging

from app.extensions import db
from app.services import disputes

log = logging.getLogger(__name__)


def send_dispute_notices(case_id: str) -> list[str]:
    """Send the case's due notices; the notice is marked sent in the same commit."""
    sent = disputes.send_notices(case_id)
    db.session.commit()
    return sent


def sweep_dispute_notices() -> int:
    """Every case with a notice still due, one at a time; one failure never blocks the rest."""
    due = disputes.cases_with_due_notices()
    for case_id in due:
        try:
            send_dispute_notices(case_id)
        except Exception:
            db.session.rollback()
            log.exception("dispute notice failed; retried later", extra={"id": case_id})
    return len(due)
