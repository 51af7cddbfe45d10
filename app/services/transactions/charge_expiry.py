"""Expiry of unpaid charges, in both halves: on read (a charge past its deadline reads as
expired at once and is moved when it is touched) and by the `rq cron` sweep. Payments share
it, being the same `Transaction`.
"""

from datetime import datetime

import sqlalchemy as sa

from app.extensions import db
from app.marks import translatable
from app.models import Transaction, TransactionStatus
from app.models.base import utcnow
from app.services.transactions import lifecycle
from app.services.transactions.lifecycle import AWAITING_PAYMENT


def overdue_condition(now: datetime) -> sa.ColumnElement[bool]:
    """The SQL test for an unpaid transaction past its deadline (not yet moved by the sweep)."""
    return sa.and_(Transaction.status.in_(AWAITING_PAYMENT), Transaction.expires_at <= now)


def status_condition(statuses: set[TransactionStatus], now: datetime) -> sa.ColumnElement[bool]:
    """The SQL test for rows whose status, as a reader sees it now, is one of `statuses`: an
    unpaid transaction past its deadline is EXPIRED (not pending) before the sweep moves it."""
    overdue = overdue_condition(now)
    stored = Transaction.status.in_(statuses)
    if TransactionStatus.EXPIRED in statuses:
        return sa.or_(stored, overdue)
    return sa.and_(stored, sa.not_(overdue))


def is_overdue(charge: Transaction, now: datetime) -> bool:
    return (
        charge.status in AWAITING_PAYMENT
        and charge.expires_at is not None
        and (charge.expires_at <= now)
    )


def expire_if_due(charge: Transaction, now: datetime | None = None) -> Transaction:
    """Move an unpaid charge past its expiry to `expired` (the read-time half of expiry)."""
    now = now or utcnow()
    if not is_overdue(charge, now):
        return charge
    locked = lifecycle.lock(charge.id)
    if is_overdue(locked, now):
        _expire(locked, now)
    return locked


def expire_listed(rows: list[Transaction], now: datetime) -> list[Transaction]:
    """Expire the overdue rows a list read. They are locked in id order, skipping any that
    another request holds (it expires or pays them itself), so two lists sorted differently
    never deadlock on each other."""
    overdue = sorted(row.id for row in rows if is_overdue(row, now))
    if overdue:
        locked = db.session.scalars(
            sa.select(Transaction)
            .where(Transaction.id.in_(overdue))
            .order_by(Transaction.id)
            .with_for_update(skip_locked=True)
            .execution_options(populate_existing=True)
        )
        for charge in locked:
            if is_overdue(charge, now):
                _expire(charge, now)
    return rows


def expire_due_charges(now: datetime | None = None, batch_size: int = 100) -> int:
    """Expire up to `batch_size` overdue charges; the job commits and calls again if full.

    Rows are locked in one statement, skipping any a request holds at that moment (it will
    expire or pay them itself), so the sweep never waits on, or deadlocks with, a reader.
    """
    now = now or utcnow()
    due = db.session.scalars(
        sa.select(Transaction)
        .where(Transaction.status.in_(AWAITING_PAYMENT), Transaction.expires_at <= now)
        .order_by(Transaction.id)
        .limit(batch_size)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    ).all()
    for charge in due:
        _expire(charge, now)
    return len(due)


def _expire(charge: Transaction, now: datetime) -> None:
    """Expire a locked, overdue charge: the reason goes in `metadata.failure`."""
    charge.metadata_ = {
        **charge.metadata_,
        "failure": lifecycle.failure(
            translatable("The payment window ended before it was paid."),
            "expired",
            # a due date's charge chose no lifetime: its terms say until when
            ttl_seconds=charge.expires_in if charge.pix_br_code and not charge.due_terms else None,
            at=now,
        ),
    }
    lifecycle.transition(charge, TransactionStatus.EXPIRED, at=now)
