"""Dispute e-mails: the job each opening or resolution asks for after it commits, and the
periodic sweep that sends any notice still due (Redis was down, the mail server failed)."""

import logging

from app.extensions import db
from app.jobs import sweep
from app.services import mail
from app.services.disputes import notices

log = logging.getLogger(__name__)


def send_dispute_notices(case_id: str) -> list[str]:
    """Send the case's due e-mails, each marked sent once it has gone. No row lock or
    transaction is held while the mail server answers, so an appeal never waits on it; a
    crash between sending and marking sends that e-mail again, never zero times."""
    due = notices.due_notices(case_id)
    db.session.rollback()  # end the read before talking to the mail server
    sent = []
    for notice in due:
        mail.send(notice.recipients, notice.subject, notice.body)
        if notices.mark_notice_sent(case_id, notice.name):
            sent.append(notice.name)
        db.session.commit()
    return sent


def sweep_dispute_notices() -> int:
    """Every case with a notice still due, one at a time; one failure never blocks the rest."""
    due = notices.cases_with_due_notices()
    sweep(due, send_dispute_notices, log=log, failure="dispute notice failed; retried later")
    return len(due)
