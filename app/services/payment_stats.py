"""Payment statistics (`GET /v1/payments/stats`) and conversion metrics
(`GET /v1/payments/metrics`) over a window of business days in America/Sao_Paulo.

Merchants ask for "the last N days" the way their bank counts them, so the window is counted
in Brazilian business days: today always counts (business day or not), then each earlier
business day until N days are counted; the window runs from 00:00 São Paulo of the earliest
counted day through now, and a transaction belongs to it by `created_at`.

Everything is aggregated in SQL (conditional sums, GROUP BY) over the
`ix_transactions_listing` range, a handful of statements per call whatever the volume: a
long window never brings transaction rows into Python. Amounts are in minor units and never
mixed across currencies. The few expressions that differ between PostgreSQL and SQLite (the
São Paulo calendar day of a timestamp, the median) sit in `_sao_paulo_day` and
`_median_seconds_to_pay`.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from app.config import PAYMENT_METHODS
from app.extensions import db
from app.models import KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services.business_days import SAO_PAULO, is_business_day
from app.services.payments import offers

MAX_DAYS = 3660
DAILY_POINTS = 366  # dailyVolume keeps the most recent days only
OUTCOME_STATUSES = {
    "expired": (TransactionStatus.EXPIRED,),
    "failed": (TransactionStatus.REFUSED,),
    "cancelled": (TransactionStatus.CANCELLED,),
    "refunded": (TransactionStatus.REFUNDED,),
    "disputed": (TransactionStatus.DISPUTE, TransactionStatus.CHARGEBACK),
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
    """Totals, paid volume per currency and per method, and the daily paid volume."""
    window = stats_window(days, now or utcnow())
    scope = _scope(account_id, mode, window.start, window.end)
    paid = Transaction.paid_at.is_not(None)
    created_today = Transaction.created_at >= window.today_start

    total, paid_count, today_count = db.session.execute(
        sa.select(sa.func.count(), _count_where(paid), _count_where(created_today)).where(*scope)
    ).one()

    by_currency = db.session.execute(
        sa.select(
            Transaction.currency,
            _sum(Transaction.amount),
            sa.func.count(),
            _sum(sa.case((created_today, Transaction.amount), else_=0)),
            _count_where(created_today),
        )
        .where(*scope, paid)
        .group_by(Transaction.currency)
        .order_by(Transaction.currency)
    ).all()

    method_volume = _sum(Transaction.amount)
    by_method = db.session.execute(  # per currency too: amounts never add across currencies
        sa.select(Transaction.paid_with, Transaction.currency, method_volume, sa.func.count())
        .where(*scope, paid, Transaction.paid_with.is_not(None))
        .group_by(Transaction.paid_with, Transaction.currency)
        .order_by(method_volume.desc(), Transaction.paid_with, Transaction.currency)
    ).all()

    return {
        "totalTransactions": total,
        "paidTransactions": paid_count,
        "todayTransactions": today_count,
        "successRate": _rate(paid_count, total),
        "volumeByCurrency": [
            {"currency": currency, "volume": volume, "count": count}
            for currency, volume, count, _, _ in by_currency
        ],
        "todayVolumeByCurrency": {
            currency: today_volume
            for currency, _, _, today_volume, today_paid in by_currency
            if today_paid
        },
        "dailyVolume": daily_volume(account_id, mode, window),
        "methodBreakdown": [
            {"method": method, "currency": code, "volume": volume, "count": count}
            for method, code, volume, count in by_method
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
    pay and the paid volume per currency, optionally for one currency only."""
    window = stats_window(days, now or utcnow())
    scope = _scope(account_id, mode, window.start, window.end)
    if currency is not None:
        scope.append(Transaction.currency == currency)
    paid = Transaction.paid_at.is_not(None)

    columns = [
        sa.func.count().label("created"),
        _count_where(Transaction.finalised_at.is_not(None)).label("awaiting"),
        _count_where(paid).label("paid"),
    ]
    for outcome, statuses in OUTCOME_STATUSES.items():
        columns.append(_count_where(Transaction.status.in_(statuses)).label(outcome))
    for method in PAYMENT_METHODS:
        paid_with_method = Transaction.paid_with == method
        columns += [
            _count_where(offers(method)).label(f"offered_{method}"),
            _count_where(paid_with_method).label(f"paid_{method}"),
        ]
    totals = db.session.execute(sa.select(*columns).where(*scope)).one()._mapping

    by_currency = db.session.execute(
        sa.select(Transaction.currency, _sum(Transaction.amount), sa.func.count())
        .where(*scope, paid)
        .group_by(Transaction.currency)
        .order_by(Transaction.currency)
    ).all()

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
    first_day = max(window.first_day, window.today - timedelta(days=DAILY_POINTS - 1))
    paid_day = _sao_paulo_day(Transaction.created_at)
    rows = db.session.execute(
        sa.select(paid_day, Transaction.currency, _sum(Transaction.amount))
        .where(
            *_scope(account_id, mode, _sao_paulo_midnight(first_day), window.end),
            Transaction.paid_at.is_not(None),
        )
        .group_by(paid_day, Transaction.currency)
        .order_by(paid_day, Transaction.currency)
    ).all()
    points = {
        first_day + timedelta(days=offset): {}
        for offset in range((window.today - first_day).days + 1)
    }
    for day, currency, volume in rows:
        if day in points:  # always, but for pre-2019 rows on SQLite (see `_sao_paulo_day`)
            points[day][currency] = volume
    return [
        {"date": day.isoformat(), "currencies": currencies} for day, currencies in points.items()
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
