"""What people are told about a dispute case: the e-mails to the account's OWNERs and ADMINs
when a case opens and when it is resolved, in the merchant's words, and which of them are
still due. `jobs/disputes.py` sends them after the change commits, and a periodic sweep
retries any the mail server refused."""

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.extensions import db
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.money import DECIMAL_POINT, format_money
from app.models import DisputeCase, MoneyOutcome
from app.models.base import utcnow
from app.services import accounts

NOTICE_GRACE = timedelta(minutes=1)
# What each outcome did with the held amount, in the merchant's words (e-mail, dashboard).
OUTCOME_EFFECTS = {
    MoneyOutcome.REFUNDED_TO_MERCHANT: "the held amount is back in your available balance",
    MoneyOutcome.CLOSED_WITHOUT_REFUND: "the held amount is not returned to you",
    MoneyOutcome.LOST: "the held amount was returned to the payer",
}
NOTICE_COLUMNS = {
    "opened": DisputeCase.opened_notice_sent_at,
    "resolved": DisputeCase.resolved_notice_sent_at,
}


@dataclass(frozen=True)
class Notice:
    """One e-mail due about a case, composed and ready to send."""

    name: str
    recipients: list[str]
    subject: str
    body: str


def due_notices(case_id: str) -> list[Notice]:
    """The case's e-mails not yet sent: `opened`, then `resolved` once it is final."""
    case = db.session.get(DisputeCase, case_id, populate_existing=True)
    if case is None:
        return []
    recipients = accounts.manager_emails(case.account_id)
    due = []
    if case.opened_notice_sent_at is None:
        due.append(Notice("opened", recipients, *_opened_mail(case)))
    if case.is_final and case.resolved_notice_sent_at is None:
        due.append(Notice("resolved", recipients, *_resolved_mail(case)))
    return due


def mark_notice_sent(case_id: str, name: str) -> bool:
    """Record that a notice went out, unless someone recorded it first (False then)."""
    column = NOTICE_COLUMNS[name]
    marked = db.session.execute(
        sa.update(DisputeCase)
        .where(DisputeCase.id == case_id, column.is_(None))
        .values({column: utcnow()})
        .execution_options(synchronize_session=False)
    )
    return marked.rowcount == 1


def cases_with_due_notices(now: datetime | None = None, limit: int = 200) -> list[str]:
    """Cases with an e-mail still due, newest first (one that keeps failing never holds up
    newer ones). Notices younger than NOTICE_GRACE are left to the job that the change
    itself asked for, so the two seldom send the same e-mail."""
    cutoff = (now or utcnow()) - NOTICE_GRACE
    due = sa.or_(
        sa.and_(DisputeCase.opened_notice_sent_at.is_(None), DisputeCase.created_at <= cutoff),
        sa.and_(DisputeCase.resolved_notice_sent_at.is_(None), DisputeCase.closed_at <= cutoff),
    )
    return list(
        db.session.scalars(
            sa.select(DisputeCase.id)
            .where(due)
            .order_by(DisputeCase.created_at.desc(), DisputeCase.id.desc())
            .limit(limit)
        )
    )


def _opened_mail(case: DisputeCase) -> tuple[str, str]:
    deadline = (
        f"Answer before {case.response_deadline:%Y-%m-%d %H:%M} UTC"
        if case.response_deadline
        else "No response deadline was reported"
    )
    held = (
        f"{format_money(case.held_amount, case.currency, DECIMAL_POINT)} is held from your "
        "wallet until the decision."
        if case.held_amount
        else "The reported amount differs from the charge's, so nothing was held; our "
        "operations team is reviewing the case."
    )
    return (
        f"Acme Pay: dispute {case.id} opened",
        f"The payer's bank disputed charge {CHARGE_ID_PREFIX}{case.transaction_id} "
        f"({case.type}, {format_money(case.amount, case.currency, DECIMAL_POINT)}). {held}\n\n"
        f"{deadline}: appeal with evidence, or accept, from the dashboard's Disputes page or "
        f"with POST /v1/med/cases/{case.id}/appeal.",
    )


def _resolved_mail(case: DisputeCase) -> tuple[str, str]:
    effect = OUTCOME_EFFECTS[case.money_outcome] if case.held_amount else "nothing had been held"
    return (
        f"Acme Pay: dispute {case.id} {case.status}",
        f"Dispute {case.id} on charge {CHARGE_ID_PREFIX}{case.transaction_id} is {case.status} "
        f"({case.money_outcome}): {effect}.",
    )
