"""Settlement hold and release: settled money waits in `pending`, then moves to `available`.

Each settlement schedules a tranche for its release time, from `SETTLEMENT_HOLD`: `D+N`
(midnight in São Paulo of the Nth Brazilian business day after the payment's local date) or
`<seconds>s` (a fixed delay). The `rq cron` job releases due tranches through the ledger,
one posting per tranche, so a tranche can never be released twice. A refund of the payment
takes what it can from the payment's tranche while it waits (`refund_funding`), so a tranche
releases what is left of it.
"""

from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app

from app.business_days import start_of_business_day_after
from app.config import SETTLEMENT_HOLD_PATTERN
from app.extensions import db
from app.models import LedgerAccount, SettlementRelease, Wallet
from app.models.base import utcnow
from app.services import ledger
from app.services.ledger import Line

RELEASE = "settlement_release"


def release_time(settled_at: datetime) -> datetime:
    business_days, seconds = SETTLEMENT_HOLD_PATTERN.fullmatch(
        current_app.config["SETTLEMENT_HOLD"]
    ).groups()
    if seconds is not None:
        return settled_at + timedelta(seconds=int(seconds))
    return start_of_business_day_after(settled_at, int(business_days))


def schedule(wallet: Wallet, reference_id: str, amount: int, settled_at: datetime) -> None:
    """Hold `amount` (already booked to the wallet's pending balance) until its release."""
    if amount > 0:
        db.session.add(
            SettlementRelease(
                wallet_id=wallet.id,
                reference_id=reference_id,
                amount=amount,
                release_at=release_time(settled_at),
            )
        )


def release_due(now: datetime | None = None, batch_size: int = 100) -> int:
    """Release up to `batch_size` due tranches; locked with SKIP LOCKED so two job runs (or
    workers) never release the same tranche and never wait on each other."""
    now = now or utcnow()
    due = db.session.scalars(
        sa.select(SettlementRelease)
        .where(SettlementRelease.released_at.is_(None), SettlementRelease.release_at <= now)
        .order_by(SettlementRelease.release_at, SettlementRelease.id)
        .limit(batch_size)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    ).all()
    for tranche in due:
        tranche.released_at = now
        if tranche.amount == 0:
            continue  # refunds took all of it before its release
        wallet = db.session.get(Wallet, tranche.wallet_id)
        ledger.post(
            account_id=wallet.account_id,
            mode=wallet.mode,
            currency=wallet.currency,
            kind=RELEASE,
            reference_id=tranche.id,
            description=f"Release of settlement {tranche.reference_id}",
            lines=[
                Line(LedgerAccount.PENDING, -tranche.amount),
                Line(LedgerAccount.AVAILABLE, tranche.amount),
            ],
        )
    return len(due)


def next_release(wallet_id: str | None) -> tuple[datetime | None, int | None]:
    """When the next tranche releases and how much releases then (every tranche due at that
    same moment), or (None, None). One statement: read in two, a release in between left
    the moment without its amount."""
    if wallet_id is None:
        return None, None
    row = db.session.execute(
        sa.select(SettlementRelease.release_at, sa.func.sum(SettlementRelease.amount))
        .where(
            SettlementRelease.wallet_id == wallet_id,
            SettlementRelease.released_at.is_(None),
            SettlementRelease.amount > 0,
        )
        .group_by(SettlementRelease.release_at)
        .order_by(SettlementRelease.release_at)
        .limit(1)
    ).first()
    return (None, None) if row is None else (row[0], int(row[1]))
