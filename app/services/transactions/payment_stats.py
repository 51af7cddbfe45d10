"""Payment statistics (`GET /v1/payments/stats`) and conversion metrics
(`GET /v1/payments/metrics`) over a window of business days in America/Sao_Paulo.

Merchants ask for "the last N days" the way their bank counts them, so the window is counted
in Brazilian business days: today always counts (business day or not), then each earlier
business day until N days are counted; the window runs from 00:00 São Paulo of the earliest
counted day through now, and a transaction belongs to it by `created_at`.

The counts and amounts come from the daily totals (`payment_totals`) and their projections:
a few rows per month of the window, per day of its partial months and per day of the daily
points, whatever the volume, folded here in Python. A day is a São Paulo calendar day on
both backends (computed in Python when the totals are kept). Only the median time to pay
reads the window's paid transactions (`_median_seconds_to_pay`, exact, on the
`ix_transactions_listing` range). Amounts are in minor units and never mixed across
currencies.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from app.business_days import SAO_PAULO, is_business_day
from app.config import PAYMENT_METHODS
from app.extensions import db
from app.models import DISPUTED_STATUSES, KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services.transactions import payment_totals

MAX_DAYS = 3660
DAILY_POINTS = 366  # dailyVolume keeps the most recent days only
OUTCOME_STATUSES = {
    "expired": (TransactionStatus.EXPIRED,),
    "failed": (TransactionStatus.REFUSED,),
    "cancelled": (TransactionStatus.CANCELLED,),
    "refunded": (TransactionStatus.REFUNDED,),
    "disputed": tuple(sorted(DISPUTED_STATUSES)),
}
RATE_DECIMALS = 4


@dataclass(frozen=True)
class StatsWindow:
    """The days a request covers: São Paulo calendar dates and their UTC instants."""

    first_day: date
    today: date
    start: datetime  # 00:00 São Paulo of `first_day`, in UTC
    today_start: datetime  # 00:00 São Paulo of `today`, in UTC
    end: datetime  # now, in UTC


def stats_window(days: int, now: datetime) -> StatsWindow:
    """Today plus the `days - 1` business days before it, through `now` (timezone-aware)."""
    assert 1 <= days <= MAX_DAYS, days
    assert now.tzinfo is not None, "now must be timezone-aware"
    today = now.astimezone(SAO_PAULO).date()
    first_day, counted = today, 1
    while counted < days:
        first_day -= timedelta(days=1)
        if is_business_day(first_day):
            counted += 1
    return calendar_window(first_day, now)


def calendar_window(first_day: date, now: datetime) -> StatsWindow:
    """From 00:00 São Paulo of `first_day` (any calendar day) through `now`."""
    today = now.astimezone(SAO_PAULO).date()
    return StatsWindow(
        first_day=first_day,
        today=today,
        start=_sao_paulo_midnight(first_day),
        today_start=_sao_paulo_midnight(today),
        end=now.astimezone(UTC),
    )


def payment_stats(account_id: str, mode: KeyMode, days: int, now: datetime | None = None) -> dict:
    """Totals, paid volume per currency and per method, and the daily paid volume, from the
    coarse totals: three small reads (the window, today, the daily points)."""
    window = stats_window(days, now or utcnow())
    totals = payment_totals.DayTotals(account_id, mode, window.end)
    groups = totals.grouped(window.first_day, by=("currency", "paid_with", "paid"))
    today = totals.grouped(window.today, by=("currency", "paid"))
    paid = [group for group in groups if group.paid and group.count]
    paid_count = sum(group.count for group in paid)
    total = sum(group.count for group in groups)
    by_currency: dict[str, dict] = {}
    by_method: dict[tuple[str, str], dict] = {}
    for group in sorted(paid, key=lambda group: group.currency):
        currency = by_currency.setdefault(group.currency, {"volume": 0, "count": 0})
        currency["volume"] += group.amount
        currency["count"] += group.count
        if group.paid_with:
            method = by_method.setdefault(
                (group.paid_with, group.currency), {"volume": 0, "count": 0}
            )
            method["volume"] += group.amount
            method["count"] += group.count

    methods = sorted(by_method.items(), key=lambda item: (-item[1]["volume"], *item[0]))
    return {
        "totalTransactions": total,
        "paidTransactions": paid_count,
        "todayTransactions": sum(group.count for group in today),
        "successRate": _rate(paid_count, total),
        "volumeByCurrency": [
            {"currency": code, "volume": figures["volume"], "count": figures["count"]}
            for code, figures in by_currency.items()
        ],
        "todayVolumeByCurrency": {
            group.currency: group.amount
            for group in sorted(today, key=lambda group: group.currency)
            if group.paid and group.count
        },
        "dailyVolume": _daily_volume(totals, window),
        "methodBreakdown": [
            {
                "method": method,
                "currency": code,
                "volume": figures["volume"],
                "count": figures["count"],
            }
            for (method, code), figures in methods
        ],
    }


def payment_metrics(
    account_id: str,
    mode: KeyMode,
    days: int,
    currency: str | None = None,
    now: datetime | None = None,
) -> dict:
    """The conversion funnel (overall and per method), final outcomes, the median time to
    pay and the paid volume per currency, optionally for one currency only. Everything but
    the median comes from the daily totals; the median is exact, over the window's paid
    transactions."""
    window = stats_window(days, now or utcnow())
    groups = [
        group
        for group in payment_totals.DayTotals(account_id, mode, window.end).grouped(
            window.first_day,
            by=("currency", "status", "paid_with", "offered", "finalised", "paid"),
        )
        if currency is None or group.currency == currency
    ]

    def count(test) -> int:
        return sum(group.count for group in groups if test(group))

    created = count(lambda group: True)
    awaiting = count(lambda group: group.finalised)
    paid = count(lambda group: group.paid)
    volumes: dict[str, list[int]] = {}
    for group in groups:
        if group.paid:
            figures = volumes.setdefault(group.currency, [0, 0])
            figures[0] += group.amount
            figures[1] += group.count
    scope = _scope(account_id, mode, window.start, window.end)
    if currency is not None:
        scope.append(Transaction.currency == currency)
    return {
        "window": {
            "days": days,
            "from": window.start.isoformat(),
            "to": window.end.isoformat(),
            "timeZone": SAO_PAULO.key,
        },
        "currency": currency,
        "funnel": {
            "created": created,
            "awaitingPayment": awaiting,
            "paid": paid,
            "conversionRate": _rate(paid, created),
            "awaitingToPaidRate": _rate(paid, awaiting),
        },
        "byMethod": [
            _method_conversion(
                method,
                offered=count(lambda group, m=method: m in group.offered.split(",")),
                paid=count(lambda group, m=method: group.paid_with == m),
            )
            for method in PAYMENT_METHODS
        ],
        "outcomes": {
            outcome: {
                "count": (outcome_count := count(lambda group, s=statuses: group.status in s)),
                "share": _rate(outcome_count, created),
            }
            for outcome, statuses in OUTCOME_STATUSES.items()
        },
        "medianTimeToPaySeconds": _median_seconds_to_pay(scope, paid),
        "volume": [
            {
                "currency": code,
                "volume": total,
                "count": paid_count,
                "averageTicket": total // paid_count,
            }
            for code, (total, paid_count) in sorted(volumes.items())
            if paid_count
        ],
    }


def _method_conversion(method: str, offered: int, paid: int) -> dict:
    return {
        "method": method,
        "offered": offered,
        "paid": paid,
        "conversionRate": _rate(paid, offered),
    }


def daily_volume(account_id: str, mode: KeyMode, window: StatsWindow) -> list[dict]:
    """Paid volume per São Paulo day and currency, one point per day (empty days too),
    oldest first, for the last `DAILY_POINTS` days of the window at most."""
    return _daily_volume(payment_totals.DayTotals(account_id, mode, window.end), window)


def _daily_volume(totals: payment_totals.DayTotals, window: StatsWindow) -> list[dict]:
    first_day = _daily_first_day(window.first_day, window.today)
    return _daily_points(first_day, window.today, totals.paid_per_day(first_day))


def _daily_first_day(first_day: date, today: date) -> date:
    return max(first_day, today - timedelta(days=DAILY_POINTS - 1))


def _daily_points(first_day: date, today: date, volumes: dict[date, dict[str, int]]) -> list[dict]:
    """One point per day from `first_day` through `today`, oldest first, with the volumes
    per currency of that day (currencies in alphabetical order)."""
    points = []
    day, one_day = first_day, timedelta(days=1)
    while day <= today:
        currencies = volumes.get(day)
        points.append(
            {
                "date": day.isoformat(),
                "currencies": dict(sorted(currencies.items())) if currencies else {},
            }
        )
        day += one_day
    return points


def _scope(
    account_id: str, mode: KeyMode, since: datetime, until: datetime
) -> list[sa.ColumnElement[bool]]:
    """The account's transactions of one mode created in [since, until] (the listing index)."""
    return [
        Transaction.account_id == account_id,
        Transaction.mode == mode,
        Transaction.created_at >= since,
        Transaction.created_at <= until,
    ]


def _on_postgresql() -> bool:
    return db.engine.dialect.name == "postgresql"


def _median_seconds_to_pay(scope: list[sa.ColumnElement[bool]], paid: int) -> int | None:
    """Median of `paid_at - created_at` over the paid transactions in scope, rounded to whole
    seconds (halves away from zero); None when none was paid."""
    if paid == 0:
        return None
    in_scope_and_paid = [*scope, Transaction.paid_at.is_not(None)]
    if _on_postgresql():
        seconds = sa.extract("epoch", Transaction.paid_at - Transaction.created_at)
        median = sa.func.percentile_cont(0.5).within_group(seconds)
        # numeric, not double precision: round() on a double rounds halves to even.
        query = sa.select(sa.func.round(sa.cast(median, sa.Numeric))).where(*in_scope_and_paid)
    else:
        # SQLite has no percentile: the middle row, or the two middle rows, of the ordering.
        # julianday() keeps milliseconds; rounding to them drops the float noise (~10 µs) of
        # subtracting two day numbers near 2.46 million, which would tip exact halves.
        days_to_pay = sa.func.julianday(Transaction.paid_at) - sa.func.julianday(
            Transaction.created_at
        )
        seconds = sa.func.round(days_to_pay * 86400, 3)
        middle = (
            sa.select(seconds.label("seconds"))
            .where(*in_scope_and_paid)
            .order_by(seconds)
            .limit(2 - paid % 2)
            .offset((paid - 1) // 2)
            .subquery()
        )
        query = sa.select(sa.func.round(sa.func.avg(middle.c.seconds)))
    median_seconds = db.session.scalar(query)
    return None if median_seconds is None else int(median_seconds)


def _rate(part: int, whole: int) -> float:
    return round(part / whole, RATE_DECIMALS) if whole else 0.0


def _sao_paulo_midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=SAO_PAULO).astimezone(UTC)
