"""What people are told about a dispute case: the e-mails to the account's OWNERs and ADMINs
when a case opens and when it is resolved, in the merchant's words, and which of them are
still due. `jobs/disputes.py` sends them after the change commits, and a periodic sweep
retries any the mail server refused.

They are read away from any browser, so they are written in the account's language
and time (`app.i18n.written_for`), money included."""

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from app.extensions import db
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.labels import DISPUTE_TYPE_LABELS, MONEY_OUTCOME_LABELS
from app.i18n import written_for
from app.models import Account, DisputeCase, DisputeStatus, MoneyOutcome
from app.models.base import utcnow
from app.services import accounts
from app.templating import money

NOTICE_GRACE = timedelta(minutes=1)
# What each outcome did with the held amount, in the merchant's words (e-mail, dashboard).
OUTCOME_EFFECTS = {
    MoneyOutcome.REFUNDED_TO_MERCHANT: _l("the held amount is back in your available balance"),
    MoneyOutcome.CLOSED_WITHOUT_REFUND: _l("the held amount is not returned to you"),
    MoneyOutcome.LOST: _l("the held amount was returned to the payer"),
}
# The resolved e-mail, for each final status: its subject and its sentence.
RESOLVED_SUBJECTS = {
    DisputeStatus.ACCEPTED: _l("Acme Pay: dispute %(id)s accepted"),
    DisputeStatus.REJECTED: _l("Acme Pay: dispute %(id)s rejected"),
    DisputeStatus.CLOSED: _l("Acme Pay: dispute %(id)s closed"),
}
RESOLVED_BODIES = {
    DisputeStatus.ACCEPTED: _l(
        "Dispute %(id)s on charge %(charge)s is accepted (%(outcome)s): %(effect)s."
    ),
    DisputeStatus.REJECTED: _l(
        "Dispute %(id)s on charge %(charge)s is rejected (%(outcome)s): %(effect)s."
    ),
    DisputeStatus.CLOSED: _l(
        "Dispute %(id)s on charge %(charge)s is closed (%(outcome)s): %(effect)s."
    ),
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
    with written_for(db.session.get(Account, case.account_id)):
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
    path = f"/v1/med/cases/{case.id}/appeal"
    if case.response_deadline:
        answer_by = case.response_deadline.strftime("%Y-%m-%d %H:%M")
        deadline = _(
            "Answer before %(deadline)s UTC: appeal with evidence, or accept, from the "
            "dashboard's Disputes page or with POST %(path)s.",
            deadline=answer_by,
            path=path,
        )
    else:
        deadline = _(
            "No response deadline was reported: appeal with evidence, or accept, from the "
            "dashboard's Disputes page or with POST %(path)s.",
            path=path,
        )
    held = (
        _(
            "%(amount)s is held from your wallet until the decision.",
            amount=money(case.held_amount, case.currency),
        )
        if case.held_amount
        else _(
            "The reported amount differs from the charge's, so nothing was held; our "
            "operations team is reviewing the case."
        )
    )
    charge = f"{CHARGE_ID_PREFIX}{case.transaction_id}"
    disputed = _(
        "The payer's bank disputed charge %(charge)s (%(type)s, %(amount)s).",
        charge=charge,
        type=DISPUTE_TYPE_LABELS[case.type],
        amount=money(case.amount, case.currency),
    )
    return (_("Acme Pay: dispute %(id)s opened", id=case.id), f"{disputed} {held}\n\n{deadline}")


def _resolved_mail(case: DisputeCase) -> tuple[str, str]:
    effect = OUTCOME_EFFECTS[case.money_outcome] if case.held_amount else _("nothing had been held")
    fields = {
        "id": case.id,
        "charge": f"{CHARGE_ID_PREFIX}{case.transaction_id}",
        "outcome": str(MONEY_OUTCOME_LABELS[case.money_outcome]),
        "effect": str(effect),
    }
    subject = RESOLVED_SUBJECTS[DisputeStatus(case.status)]  # only a final case is resolved
    return subject % fields, RESOLVED_BODIES[DisputeStatus(case.status)] % fields
