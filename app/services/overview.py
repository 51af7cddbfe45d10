"""The figures of the dashboard overview, for one account and mode: today's payments, the
daily paid volume of the last 30 days, the next settlement releases and the payouts waiting
for approval.

Payment figures come from `services.payment_stats`, so the overview, the stats page and
`GET /v1/payments/stats` count alike: a payment belongs to the São Paulo calendar day it was
created on. Every figure is aggregated in SQL, a few statements whatever the volume.
"""

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import sqlalchemy as sa

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import KeyMode, Payout, PayoutStatus, SettlementRelease, Wallet
from app.services.transactions import payment_stats

CHART_DAYS = 30
UPCOMING_RELEASES = 5


@dataclass(frozen=True)
class PaymentsToday:
    """Payments created today (São Paulo calendar day), and the paid volume per currency."""

    day: date
    created: int
    paid: int
    failed: int
    paid_volume: dict[str, int]


@dataclass(frozen=True)
class UpcomingRelease:
    """Settled money of one currency that moves from pending to available at `release_at`."""

    release_at: datetime
    currency: str
    amount: int


@dataclass(frozen=True)
class PendingPayouts:
    """Payouts of one currency requested and not yet approved, rejected or cancelled."""

    currency: str
    count: int
    total: int


def payments_today(account_id: str, mode: KeyMode, now: datetime) -> PaymentsToday:
    """Counts and paid volume of the payments created since 00:00 São Paulo."""
    metrics = payment_stats.payment_metrics(account_id, mode, 1, now=now)
    return PaymentsToday(
        day=now.astimezone(SAO_PAULO).date(),
        created=metrics["funnel"]["created"],
        paid=metrics["funnel"]["paid"],
        failed=metrics["outcomes"]["failed"]["count"],
        paid_volume={row["currency"]: row["volume"] for row in metrics["volume"]},
    )


def daily_volume(account_id: str, mode: KeyMode, now: datetime) -> list[dict]:
    """Paid volume per São Paulo calendar day of the last `CHART_DAYS` days (today included,
    empty days too), oldest first, in the shape of the stats' `dailyVolume`."""
    first_day = now.astimezone(SAO_PAULO).date() - timedelta(days=CHART_DAYS - 1)
    window = payment_stats.calendar_window(first_day, now)
    return payment_stats.daily_volume(account_id, mode, window)


def upcoming_releases(
    account_id: str, mode: KeyMode, limit: int = UPCOMING_RELEASES
) -> list[UpcomingRelease]:
    """The next release moments, soonest first, each with the amount of every tranche of a
    currency due then (as `releases.next_release` sums them)."""
    amount = sa.func.sum(SettlementRelease.amount)
    rows = db.session.execute(
        sa.select(SettlementRelease.release_at, Wallet.currency, amount)
        .join(Wallet, Wallet.id == SettlementRelease.wallet_id)
        .where(
            Wallet.account_id == account_id,
            Wallet.mode == mode,
            SettlementRelease.released_at.is_(None),
            SettlementRelease.amount > 0,
        )
        .group_by(SettlementRelease.release_at, Wallet.currency)
        .order_by(SettlementRelease.release_at, Wallet.currency)
        .limit(limit)
    ).all()
    return [UpcomingRelease(at, currency, int(total)) for at, currency, total in rows]


def pending_payouts(account_id: str, mode: KeyMode) -> list[PendingPayouts]:
    """Per currency, how many payouts wait for approval and their requested amounts."""
    rows = db.session.execute(
        sa.select(Payout.currency, sa.func.count(), sa.func.sum(Payout.amount))
        .where(
            Payout.account_id == account_id,
            Payout.mode == mode,
            Payout.status == PayoutStatus.PENDING,
        )
        .group_by(Payout.currency)
        .order_by(Payout.currency)
    ).all()
    return [PendingPayouts(currency, count, int(total)) for currency, count, total in rows]
