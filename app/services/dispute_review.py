"""The back-office's dispute desk: the open and appealed cases of every merchant account, with
what staff need to handle each (whose it is, the charge's own amount beside the reported one,
the evidence the merchant attached).

Staff act through `disputes.cases` (`request_evidence`, `decide`, `open_case`), the
functions the sandbox's dispute channel calls too; this module only finds what is waiting. It
reads across every merchant account on purpose (platform staff only), so no merchant-facing
route may call it.
"""

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa

from app.extensions import db
from app.models import Account, DisputeCase, DisputeEvidence, DisputeStatus, Transaction

DEFAULT_QUEUE_LIMIT = 100
UNDECIDED = (DisputeStatus.OPEN, DisputeStatus.APPEALED)


@dataclass(frozen=True)
class CaseUnderReview:
    """A row of the desk: the case, its merchant, its charge's amount and confirmed evidence
    (newest first)."""

    case: DisputeCase
    account_name: str
    charge_amount: int
    evidence: list[DisputeEvidence]


def cases_under_review(limit: int = DEFAULT_QUEUE_LIMIT) -> list[CaseUnderReview]:
    """Open and appealed cases of every account and mode, the most urgent deadline first
    (cases without one last), each with its merchant and charge in one query and every
    case's evidence in another."""
    rows = db.session.execute(
        sa.select(DisputeCase, Account.name, Transaction.amount)
        .join(Account, Account.id == DisputeCase.account_id)
        .join(Transaction, Transaction.id == DisputeCase.transaction_id)
        .where(DisputeCase.status.in_(UNDECIDED))
        .order_by(
            DisputeCase.response_deadline.is_(None),
            DisputeCase.response_deadline,
            DisputeCase.created_at,
            DisputeCase.id,
        )
        .limit(limit)
    ).all()
    evidence = confirmed_evidence([case.id for case, _, _ in rows])
    return [
        CaseUnderReview(case, account_name, charge_amount, evidence[case.id])
        for case, account_name, charge_amount in rows
    ]


def confirmed_evidence(case_ids: list[str]) -> dict[str, list[DisputeEvidence]]:
    """Confirmed evidence per case, newest first (unconfirmed uploads do not exist yet)."""
    grouped: dict[str, list[DisputeEvidence]] = defaultdict(list)
    if not case_ids:
        return grouped
    items = db.session.scalars(
        sa.select(DisputeEvidence)
        .where(DisputeEvidence.case_id.in_(case_ids), DisputeEvidence.uploaded_at.is_not(None))
        .order_by(DisputeEvidence.created_at.desc(), DisputeEvidence.id.desc())
    )
    for item in items:
        grouped[item.case_id].append(item)
    return grouped
