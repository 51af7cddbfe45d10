"""Payment statistics (`GET /v1/payments/stats`) and conversion metrics
(`GET /v1/payments/metrics`) over a window of business days in America/Sao_Paulo.

Merchants ask for "the last N days" the way their bank counts them, so the window is counted
in Brazilian business days: today always counts (business day or not), then each earlier
business day until N days are counted; the window runs from 00:00 São Paulo of the earliest
counted day through now, and a transaction belongs to it by `created_at`.

Everything is aggregated in SQL (conditional sums, GROUP BY) over the
`ix_transactions_listing` range, whatever the volume: one statement for the stats (grouped by
day, currency and method, then folded in Python from at most a few thousand groups), two for
the metrics (the funnel per currency, the median); a long window never brings transaction
rows into Python, and reads the window's rows once per statement. Amounts are in minor
units and never mixed across currencies. The few expressions that differ between PostgreSQL
and SQLite (the São Paulo calendar day of a timestamp, the median, "offers a method") sit in
`_sao_paulo_day`, `_median_seconds_to_pay` and `payment_listing.offers`.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from app.business_days import SAO_PAULO, is_business_day
from app.config import PAYMENT_METHODS
from app.extensions import db
from app.models import DISPUTED_STATUSES, KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services.transactions.payment_listing import offers

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
    """Totals, paid volume per currency and per method, and the daily paid volume, all from
    one grouped statement (one pass over the window's rows, whatever its length)."""
    window = stats_window(days, now or utcnow())
    daily_first_day = _daily_first_day(window.first_day, window.today)
    groups = _stats_groups(account_id, mode, window, daily_first_day)

    total = sum(group.count for group in groups)
    paid_count = sum(group.paid_count for group in groups)
    by_currency: dict[str, dict] = {}
    by_method: dict[tuple[str, str], dict] = {}
    daily: dict[date, dict[str, int]] = {}
    for group in sorted(groups, key=lambda group: group.currency):
        if not group.paid_count:
            continue
        today = group.day == window.today
        currency = by_currency.setdefault(
            group.currency,
            {"volume": 0, "count": 0, "today_volume": 0, "today_count": 0},
        )
        currency["volume"] += group.paid_volume
        currency["count"] += group.paid_count
        currency["today_volume"] += group.paid_volume if today else 0
        currency["today_count"] += group.paid_count if today else 0
        if group.paid_with is not None:
            method = by_method.setdefault(
                (group.paid_with, group.currency), {"volume": 0, "count": 0}
            )
            method["volume"] += group.paid_volume
            method["count"] += group.paid_count
        if group.day is not None:
            day = daily.setdefault(group.day, {})
            day[group.currency] = day.get(group.currency, 0) + group.paid_volume

    methods = sorted(by_method.items(), key=lambda item: (-item[1]["volume"], *item[0]))
    return {
        "totalTransactions": total,
        "paidTransactions": paid_count,
        "todayTransactions": sum(group.count for group in groups if group.day == window.today),
        "successRate": _rate(paid_count, total),
        "volumeByCurrency": [
            {"currency": code, "volume": figures["volume"], "count": figures["count"]}
            for code, figures in by_currency.items()
        ],
        "todayVolumeByCurrency": {
            code: figures["today_volume"]
            for code, figures in by_currency.items()
            if figures["today_count"]
        },
        "dailyVolume": _daily_points(daily_first_day, window.today, daily),
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


@dataclass(frozen=True)
class _StatsGroup:
    """The window's transactions of one São Paulo day (None before the daily points' first
    day), currency and `paid_with` (None when not set)."""

    day: date | None
    currency: str
    paid_with: str | None
    count: int
    paid_count: int
    paid_volume: int


def _stats_groups(
    account_id: str, mode: KeyMode, window: StatsWindow, daily_first_day: date
) -> list[_StatsGroup]:
    """One pass over the window's rows: counts and paid volume per (day, currency, method).
    Days before `daily_first_day` fold into one NULL day, so a long window adds no groups.
    The day is computed in a subquery and grouped by its column: PostgreSQL must see the same
    expression in SELECT and GROUP BY, and a bound parameter would appear twice."""
    paid = Transaction.paid_at.is_not(None)
    day = sa.case(
        (
            Transaction.created_at >= _sao_paulo_midnight(daily_first_day),
            _sao_paulo_day(Transaction.created_at),
        ),
        else_=sa.null(),
    )
    rows = (
        sa.select(
            day.label("day"),
            Transaction.currency,
            Transaction.paid_with,
            sa.case((paid, 1), else_=0).label("paid"),
            sa.case((paid, Transaction.amount), else_=0).label("paid_amount"),
        )
        .where(*_scope(account_id, mode, window.start, window.end))
        .subquery()
    )
    grouped = db.session.execute(
        sa.select(
            rows.c.day,
            rows.c.currency,
            rows.c.paid_with,
            sa.func.count(),
            _sum(rows.c.paid),
            _sum(rows.c.paid_amount),
        ).group_by(rows.c.day, rows.c.currency, rows.c.paid_with)
    ).all()
    return [_StatsGroup(*row) for row in grouped]


def payment_metrics(
    account_id: str,
    mode: KeyMode,
    days: int,
    currency: str | None = None,
    now: datetime | None = None,
) -> dict:
    """The conversion funnel (overall and per method), final outcomes, the median time to
    pay and the paid volume per currency, optionally for one currency only. The funnel and
    the volumes come from one statement grouped by currency (one pass over the window)."""
    window = stats_window(days, now or utcnow())
    scope = _scope(account_id, mode, window.start, window.end)
    if currency is not None:
        scope.append(Transaction.currency == currency)
    paid = Transaction.paid_at.is_not(None)

    counts = [
        sa.func.count().label("created"),
        _count_where(Transaction.finalised_at.is_not(None)).label("awaiting"),
        _count_where(paid).label("paid"),
    ]
    for outcome, statuses in OUTCOME_STATUSES.items():
        counts.append(_count_where(Transaction.status.in_(statuses)).label(outcome))
    for method in PAYMENT_METHODS:
        paid_with_method = Transaction.paid_with == method
        counts += [
            _count_where(offers(method)).label(f"offered_{method}"),
            _count_where(paid_with_method).label(f"paid_{method}"),
        ]
    paid_volume = _sum(sa.case((paid, Transaction.amount), else_=0)).label("volume")
    per_currency = db.session.execute(
        sa.select(Transaction.currency, paid_volume, *counts)
        .where(*scope)
        .group_by(Transaction.currency)
    ).all()
    totals = {count.name: sum(row._mapping[count.name] for row in per_currency) for count in counts}
    by_currency = sorted((row.currency, row.volume, row.paid) for row in per_currency if row.paid)

    created = totals["created"]
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
            "awaitingPayment": totals["awaiting"],
            "paid": totals["paid"],
            "conversionRate": _rate(totals["paid"], created),
            "awaitingToPaidRate": _rate(totals["paid"], totals["awaiting"]),
        },
        "byMethod": [
            {
                "method": method,
                "offered": totals[f"offered_{method}"],
                "paid": totals[f"paid_{method}"],
                "conversionRate": _rate(totals[f"paid_{method}"], totals[f"offered_{method}"]),
            }
            for method in PAYMENT_METHODS
        ],
        "outcomes": {
            outcome: {"count": totals[outcome], "share": _rate(totals[outcome], created)}
            for outcome in OUTCOME_STATUSES
        },
        "medianTimeToPaySeconds": _median_seconds_to_pay(scope, totals["paid"]),
        "volume": [
            {
                "currency": code,
                "volume": total,
                "count": count,
                "averageTicket": total // count,
            }
            for code, total, count in by_currency
        ],
    }


def daily_volume(account_id: str, mode: KeyMode, window: StatsWindow) -> list[dict]:
    """Paid volume per São Paulo day and currency, one point per day (empty days too),
    oldest first, for the last `DAILY_POINTS` days of the window at most."""
    first_day = _daily_first_day(window.first_day, window.today)
    paid_day = _sao_paulo_day(Transaction.created_at)
    rows = db.session.execute(  # no ORDER BY: hashed, not sorted (a sort spills on long windows)
        sa.select(paid_day, Transaction.currency, _sum(Transaction.amount))
        .where(
            *_scope(account_id, mode, _sao_paulo_midnight(first_day), window.end),
            Transaction.paid_at.is_not(None),
        )
        .group_by(paid_day, Transaction.currency)
    ).all()
    volumes: dict[date, dict[str, int]] = {}
    for day, currency, volume in rows:
        volumes.setdefault(day, {})[currency] = volume
    return _daily_points(first_day, window.today, volumes)


def _daily_first_day(first_day: date, today: date) -> date:
    return max(first_day, today - timedelta(days=DAILY_POINTS - 1))


def _daily_points(first_day: date, today: date, volumes: dict[date, dict[str, int]]) -> list[dict]:
    """One point per day from `first_day` through `today`, oldest first, with the volumes
    per currency of that day (currencies in alphabetical order)."""
    days = (first_day + timedelta(days=offset) for offset in range((today - first_day).days + 1))
    return [
        {"date": day.isoformat(), "currencies": dict(sorted(volumes.get(day, {}).items()))}
        for day in days
    ]


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


def _sao_paulo_day(timestamp: sa.ColumnElement) -> sa.ColumnElement[date]:
    """The São Paulo calendar date of a UTC timestamp column, as a `date` on both backends.

    SQLite keeps timestamps as naive UTC text and knows no time zones, so the offset is fixed
    at UTC-3: São Paulo has observed no daylight saving time since 2019, so older rows on
    SQLite (development only) may land an hour off around midnight.
    """
    if _on_postgresql():
        # Inline, not bound: PostgreSQL must see the same expression in SELECT and GROUP BY.
        zone = sa.literal_column(f"'{SAO_PAULO.key}'")
        return sa.cast(sa.func.timezone(zone, timestamp), sa.Date)
    return sa.type_coerce(sa.func.date(timestamp, "-3 hours"), sa.Date)


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


def _count_where(condition: sa.ColumnElement[bool]) -> sa.ColumnElement[int]:
    return _sum(sa.case((condition, 1), else_=0))


def _sum(value: sa.ColumnElement) -> sa.ColumnElement[int]:
    """SUM as an integer, 0 over no rows (PostgreSQL sums bigints as numeric)."""
    return sa.cast(sa.func.coalesce(sa.func.sum(value), 0), sa.BigInteger)


def _rate(part: int, whole: int) -> float:
    return round(part / whole, RATE_DECIMALS) if whole else 0.0


def _sao_paulo_midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=SAO_PAULO).astimezone(UTC)
