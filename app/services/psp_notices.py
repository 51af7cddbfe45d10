"""The back office's inbox of what the live PSP reported and nobody may ignore: a Pix the
PSP would not confirm (a forged or tampered webhook), a Pix that belongs to no charge of ours,
a value this release does not know, something unreadable.

A notice is logged when it first appears (an error for an unconfirmed Pix, a warning for the
rest) and then only counted, however many webhook re-deliveries and reconciliation runs
report it again, until staff resolve it. `acme_psp_notices_open` counts the open ones by kind
for alerting (docs/operations.md).
"""

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from app.errors import NotFound
from app.extensions import db
from app.formats.charges import charge_id
from app.marks import translatable
from app.models import (
    Account,
    KeyMode,
    PspNotice,
    PspNoticeKind,
    Refund,
    RefundStatus,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow

log = logging.getLogger(__name__)

MAX_SUBJECT = 200
MAX_DETAIL = 1000
# The reported object is kept for staff to read, within reason: a hostile body is cut.
MAX_REPORTED_CHARACTERS = 20_000
LIST_LIMIT = 100
ALARMING = frozenset({PspNoticeKind.UNCONFIRMED_PIX})
LIVE_PROVIDER = "api_pix"


@dataclass(frozen=True)
class Refusal:
    """A live charge or refund the PSP refused, as staff read it."""

    what: str
    record_id: str
    account_name: str
    amount: int
    currency: str
    reason: str
    at: datetime | None


def record(
    kind: PspNoticeKind, subject: str, detail: str, reported: Mapping | None = None
) -> PspNotice:
    """Open a notice, or count one more sighting of the same (kind, subject); a resolved
    notice seen again is opened again. Safe against a twin recording it concurrently."""
    subject, detail = _printable(subject)[:MAX_SUBJECT], _printable(detail)[:MAX_DETAIL]
    now = utcnow()
    notice = _find(kind, subject)
    if notice is None:
        try:
            with db.session.begin_nested():
                notice = PspNotice(
                    kind=kind,
                    subject=subject,
                    detail=detail,
                    reported=_kept(reported),
                    occurrences=1,
                    first_seen_at=now,
                    last_seen_at=now,
                )
                db.session.add(notice)
        except IntegrityError:
            notice = _find(kind, subject)
        else:
            _log_new(notice)
            return notice
    notice.occurrences += 1
    notice.last_seen_at = now
    if notice.resolved_at is not None:
        notice.resolved_at, notice.resolved_by, notice.detail = None, None, detail
        _log_new(notice)
    return notice


def open_notices(limit: int = LIST_LIMIT) -> list[PspNotice]:
    """The unresolved notices, the most recently seen first."""
    return list(
        db.session.scalars(
            sa.select(PspNotice)
            .where(PspNotice.resolved_at.is_(None))
            .order_by(PspNotice.last_seen_at.desc(), PspNotice.id)
            .limit(limit)
        )
    )


def open_counts() -> dict[PspNoticeKind, int]:
    """Unresolved notices by kind, every kind present (zero when none)."""
    rows = db.session.execute(
        sa.select(PspNotice.kind, sa.func.count())
        .where(PspNotice.resolved_at.is_(None))
        .group_by(PspNotice.kind)
    )
    counts = dict.fromkeys(PspNoticeKind, 0)
    counts.update({kind: count for kind, count in rows})
    return counts


def recent_refusals(limit: int = LIST_LIMIT) -> list[Refusal]:
    """The live PSP's latest refusals of charges and refunds, newest first, each with the
    reason it gave (its problem details, `violacoes` and `correlationId` included)."""
    charges = db.session.execute(
        sa.select(Transaction, Account.name)
        .join(Account, Account.id == Transaction.account_id)
        .where(
            Transaction.mode == KeyMode.LIVE,
            Transaction.provider == LIVE_PROVIDER,
            Transaction.status == TransactionStatus.REFUSED,
        )
        .order_by(Transaction.created_at.desc())
        .limit(limit)
    )
    refunds = db.session.execute(
        sa.select(Refund, Account.name)
        .join(Account, Account.id == Refund.account_id)
        .join(Transaction, Transaction.id == Refund.transaction_id)
        .where(
            Refund.mode == KeyMode.LIVE,
            Transaction.provider == LIVE_PROVIDER,
            Refund.status == RefundStatus.FAILED,
        )
        .order_by(Refund.updated_at.desc())
        .limit(limit)
    )
    refusals = [
        Refusal(
            what="charge",
            record_id=charge_id(charge),
            account_name=name,
            amount=charge.amount,
            currency=charge.currency,
            reason=(charge.metadata_.get("failure") or {}).get("reason") or "",
            at=charge.created_at,
        )
        for charge, name in charges
    ] + [
        Refusal(
            what="refund",
            record_id=refund.id,
            account_name=name,
            amount=refund.amount,
            currency=refund.currency,
            reason=refund.failure_reason or "",
            at=refund.updated_at,
        )
        for refund, name in refunds
    ]
    return sorted(refusals, key=lambda refusal: refusal.at, reverse=True)[:limit]


def resolve(notice_id: str, user_id: str) -> PspNotice:
    """Staff have dealt with it; it reopens if the PSP reports it again."""
    notice = db.session.get(PspNotice, notice_id)
    if notice is None:
        raise NotFound(translatable("No such notice."))
    if notice.resolved_at is None:
        notice.resolved_at, notice.resolved_by = utcnow(), user_id
    return notice


def _find(kind: PspNoticeKind, subject: str) -> PspNotice | None:
    return db.session.scalar(
        sa.select(PspNotice)
        .where(PspNotice.kind == kind, PspNotice.subject == subject)
        .with_for_update()
    )


def _kept(reported: Mapping | None) -> dict:
    """The reported object as JSON the database stores (no NUL, which PostgreSQL refuses),
    cut to a readable size."""
    if not reported:
        return {}
    kept = _without_nul(json.loads(json.dumps(reported, default=str)))
    text = json.dumps(kept, ensure_ascii=False)
    if len(text) <= MAX_REPORTED_CHARACTERS:
        return kept
    return {"truncated": text[:MAX_REPORTED_CHARACTERS]}


def _without_nul(value: object) -> object:
    if isinstance(value, str):
        return _printable(value)
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_printable(key): _without_nul(item) for key, item in value.items()}
    return value


def _printable(text: str) -> str:
    return text.replace("\x00", "")


def _log_new(notice: PspNotice) -> None:
    level = logging.ERROR if notice.kind in ALARMING else logging.WARNING
    log.log(
        level,
        "PSP notice for the back office: %s",
        notice.detail,
        extra={"kind": notice.kind.value, "subject": notice.subject, "notice_id": notice.id},
    )
