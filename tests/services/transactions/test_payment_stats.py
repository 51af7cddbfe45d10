"""Payment stats and metrics: the business-day window in São Paulo, per-day and per-currency
volumes, the conversion funnel and the median time to pay, aggregated in SQL on SQLite and
PostgreSQL alike, for one account and mode only."""

from datetime import UTC, date, datetime, timedelta

import marshmallow as ma
import pytest

from app.api.schemas.payments import StatsSchema
from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import KeyMode, Origin, Transaction, TransactionStatus
from app.services.transactions.payment_stats import payment_metrics, payment_stats, stats_window
from tests.support import factories

S = TransactionStatus


def sao_paulo(day: date, hour: int = 12, minute: int = 0) -> datetime:
    """A São Paulo wall-clock time, as the UTC instant the database stores."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=SAO_PAULO).astimezone(UTC)


MONDAY = date(2026, 11, 23)  # after Friday 2026-11-20, a national holiday (Consciência Negra)
NOW = sao_paulo(MONDAY, 10)


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def add(app, account_id):
    """Insert one transaction; `paid_after` makes it paid that long after its creation."""

    def add(
        created_at: datetime,
        amount: int = 1_000,
        *,
        currency: str = "BRL",
        methods: tuple[str, ...] = ("PIX",),
        status: TransactionStatus = S.WAITING_PAYMENT,
        paid_with: str | None = None,
        paid_after: timedelta | None = None,
        finalised: bool = True,
        account: str | None = None,
        mode: KeyMode = KeyMode.TEST,
    ) -> None:
        if paid_after is not None:
            paid_with = paid_with or methods[0]
            if status == S.WAITING_PAYMENT:
                status = S.PAID
        with app.app_context():
            db.session.add(
                Transaction(
                    account_id=account or account_id,
                    mode=mode,
                    origin=Origin.PAYMENTS,
                    status=status,
                    amount=amount,
                    currency=currency,
                    payment_methods=list(methods),
                    paid_with=paid_with,
                    created_at=created_at,
                    finalised_at=created_at + timedelta(seconds=5) if finalised else None,
                    paid_at=created_at + paid_after if paid_after is not None else None,
                )
            )
            db.session.commit()

    return add


@pytest.fixture
def stats(app, account_id):
    def stats(days: int, now: datetime = NOW) -> dict:
        with app.app_context():
            return payment_stats(account_id, KeyMode.TEST, days, now=now)

    return stats


@pytest.fixture
def metrics(app, account_id):
    def metrics(days: int = 7, currency: str | None = None, now: datetime = NOW) -> dict:
        with app.app_context():
            return payment_metrics(account_id, KeyMode.TEST, days, currency=currency, now=now)

    return metrics


PAID = timedelta(minutes=2)


def test_the_window_is_today_plus_earlier_business_days_skipping_weekends_and_holidays():
    window = stats_window(2, NOW)

    assert window.first_day == date(2026, 11, 19)  # Thursday: Fri is a holiday, then Sat, Sun
    assert window.today == MONDAY
    assert window.start == datetime(2026, 11, 19, 3, tzinfo=UTC)
    assert window.today_start == datetime(2026, 11, 23, 3, tzinfo=UTC)
    assert window.end == NOW
    assert stats_window(1, NOW).first_day == MONDAY
    assert stats_window(3, NOW).first_day == date(2026, 11, 18)


def test_stats_cover_thursday_to_monday_across_the_holiday_and_the_weekend(add, stats):
    add(sao_paulo(date(2026, 11, 18), 23, 59), 9_999, paid_after=PAID)  # Wednesday: out
    add(sao_paulo(date(2026, 11, 19), 0, 0), 100, paid_after=PAID)
    add(sao_paulo(date(2026, 11, 21)), 200, paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 400, paid_after=PAID)
    add(NOW + timedelta(seconds=1), 9_999, paid_after=PAID)  # after now: out

    result = stats(2)

    assert result["totalTransactions"] == 3
    assert result["volumeByCurrency"] == [{"currency": "BRL", "volume": 700, "count": 3}]
    assert result["dailyVolume"] == [
        {"date": "2026-11-19", "currencies": {"BRL": 100}},
        {"date": "2026-11-20", "currencies": {}},
        {"date": "2026-11-21", "currencies": {"BRL": 200}},
        {"date": "2026-11-22", "currencies": {}},
        {"date": "2026-11-23", "currencies": {"BRL": 400}},
    ]


def test_a_transaction_belongs_to_its_sao_paulo_day(add, stats):
    add(datetime(2026, 11, 23, 2, 30, tzinfo=UTC), 100, paid_after=PAID)  # Sunday 23:30 there
    add(datetime(2026, 11, 23, 3, 0, tzinfo=UTC), 200, paid_after=PAID)  # Monday 00:00 there

    result = stats(2)

    assert result["todayTransactions"] == 1
    assert result["todayVolumeByCurrency"] == {"BRL": 200}
    assert result["dailyVolume"][-2:] == [
        {"date": "2026-11-22", "currencies": {"BRL": 100}},
        {"date": "2026-11-23", "currencies": {"BRL": 200}},
    ]


def test_today_counts_even_when_it_is_not_a_business_day(add, stats):
    sunday = date(2026, 11, 22)
    add(sao_paulo(sunday, 8), 300, paid_after=PAID)
    add(sao_paulo(date(2026, 11, 21)), 9_999, paid_after=PAID)  # Saturday: out of one day

    result = stats(1, now=sao_paulo(sunday, 15))

    assert result["totalTransactions"] == result["todayTransactions"] == 1
    assert result["dailyVolume"] == [{"date": "2026-11-22", "currencies": {"BRL": 300}}]
    assert stats(2, now=sao_paulo(sunday, 15))["totalTransactions"] == 2  # back to Thursday


def test_daily_volume_keeps_the_366_most_recent_days(add, stats):
    add(sao_paulo(MONDAY - timedelta(days=400)), 500, paid_after=PAID)  # in the window
    add(sao_paulo(MONDAY - timedelta(days=365)), 700, paid_after=PAID)

    result = stats(400)

    daily = result["dailyVolume"]
    assert len(daily) == 366
    assert daily[0] == {"date": "2025-11-23", "currencies": {"BRL": 700}}
    assert daily[-1] == {"date": "2026-11-23", "currencies": {}}
    assert all(point["currencies"] == {} for point in daily[1:])
    assert result["volumeByCurrency"] == [{"currency": "BRL", "volume": 1_200, "count": 2}]


def test_rows_before_the_daily_points_count_in_every_total(add, stats):
    """The stats come from one pass grouped by day: days before the 366 daily points fold into
    one group, which must still count in the totals, the currencies and the methods."""
    old = sao_paulo(MONDAY - timedelta(days=400))
    add(old, 500, methods=("PIX",), paid_after=PAID)
    add(old, 9_999, methods=("PIX",), status=S.EXPIRED, paid_with="PIX")  # never paid
    add(sao_paulo(MONDAY, 9), 700, methods=("BOLETO",), paid_after=PAID)

    result = stats(400)

    assert (result["totalTransactions"], result["paidTransactions"]) == (3, 2)
    assert result["todayTransactions"] == 1
    assert result["volumeByCurrency"] == [{"currency": "BRL", "volume": 1_200, "count": 2}]
    assert result["todayVolumeByCurrency"] == {"BRL": 700}
    assert result["methodBreakdown"] == [
        {"method": "BOLETO", "currency": "BRL", "volume": 700, "count": 1},
        {"method": "PIX", "currency": "BRL", "volume": 500, "count": 1},
    ]
    assert result["dailyVolume"][-1] == {"date": "2026-11-23", "currencies": {"BRL": 700}}
    assert all(point["currencies"] == {} for point in result["dailyVolume"][:-1])


def test_totals_success_rate_and_volume_per_currency(add, stats):
    add(sao_paulo(MONDAY, 8), 1_000, currency="EUR", paid_after=PAID, paid_with="MBWAY")
    add(sao_paulo(MONDAY, 9), 2_500, paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 500, status=S.REFUNDED, paid_after=PAID)  # paid, then refunded
    add(sao_paulo(date(2026, 11, 19)), 4_000, paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 9_999, status=S.EXPIRED)
    add(sao_paulo(MONDAY, 9), 9_999)

    result = stats(2)

    assert result["totalTransactions"] == 6
    assert result["paidTransactions"] == 4
    assert result["todayTransactions"] == 5
    assert result["successRate"] == 0.6667
    assert result["volumeByCurrency"] == [
        {"currency": "BRL", "volume": 7_000, "count": 3},
        {"currency": "EUR", "volume": 1_000, "count": 1},
    ]
    assert result["todayVolumeByCurrency"] == {"BRL": 3_000, "EUR": 1_000}


def test_an_empty_window_still_has_one_point_per_day(stats):
    result = stats(2)

    assert result["totalTransactions"] == result["paidTransactions"] == 0
    assert result["successRate"] == 0.0
    assert result["volumeByCurrency"] == result["methodBreakdown"] == []
    assert result["todayVolumeByCurrency"] == {}
    assert [point["date"] for point in result["dailyVolume"]] == [
        "2026-11-19",
        "2026-11-20",
        "2026-11-21",
        "2026-11-22",
        "2026-11-23",
    ]


def test_method_breakdown_is_by_volume_then_method(add, stats):
    for amount, method in [(1_000, "PIX"), (1_000, "PIX"), (2_000, "BOLETO"), (5_000, "MBWAY")]:
        add(sao_paulo(MONDAY, 9), amount, methods=(method,), paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 9_999, methods=("CRYPTO",))  # offered, never paid

    assert stats(1)["methodBreakdown"] == [
        {"method": "MBWAY", "currency": "BRL", "volume": 5_000, "count": 1},
        {"method": "BOLETO", "currency": "BRL", "volume": 2_000, "count": 1},
        {"method": "PIX", "currency": "BRL", "volume": 2_000, "count": 2},
    ]


def test_method_breakdown_never_adds_amounts_of_different_currencies(add, stats):
    add(sao_paulo(MONDAY, 9), 1_000, methods=("CREDIT_CARD",), paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 2_000, methods=("CREDIT_CARD",), paid_after=PAID, currency="EUR")

    assert stats(1)["methodBreakdown"] == [
        {"method": "CREDIT_CARD", "currency": "EUR", "volume": 2_000, "count": 1},
        {"method": "CREDIT_CARD", "currency": "BRL", "volume": 1_000, "count": 1},
    ]


def test_other_accounts_and_the_other_mode_are_never_counted(app, add, stats, metrics):
    other_account = factories.make_account(app, name="Outra Loja")
    add(sao_paulo(MONDAY, 9), 100, paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 9_999, paid_after=PAID, account=other_account)
    add(sao_paulo(MONDAY, 9), 9_999, paid_after=PAID, mode=KeyMode.LIVE)

    result = stats(1)
    assert result["totalTransactions"] == 1
    assert result["volumeByCurrency"] == [{"currency": "BRL", "volume": 100, "count": 1}]
    assert metrics()["funnel"]["created"] == 1


def test_metrics_funnel_methods_and_outcomes(add, metrics):
    day = sao_paulo(MONDAY, 9)
    add(day, 1_000, methods=("PIX", "BOLETO"), paid_after=PAID, paid_with="BOLETO")
    add(day, 3_000, methods=("PIX", "CREDIT_CARD"), paid_after=PAID, paid_with="PIX")
    add(day, 2_000, methods=("PIX", "CREDIT_CARD"), status=S.DISPUTE, paid_after=PAID)
    add(day, 500, methods=("CREDIT_CARD",), status=S.CHARGEBACK, paid_after=PAID)
    add(day, 700, methods=("PIX",), status=S.EXPIRED)
    add(day, 700, methods=("CREDIT_CARD",), status=S.REFUSED)
    add(day, 700, methods=("MBWAY",), status=S.CANCELLED, finalised=False)
    add(day, 700, methods=("PIX",), status=S.PENDING, finalised=False)

    result = metrics(days=2)

    assert result["window"] == {
        "days": 2,
        "from": "2026-11-19T03:00:00+00:00",
        "to": "2026-11-23T13:00:00+00:00",
        "timeZone": "America/Sao_Paulo",
    }
    assert result["currency"] is None
    assert result["funnel"] == {
        "created": 8,
        "awaitingPayment": 6,
        "paid": 4,
        "conversionRate": 0.5,
        "awaitingToPaidRate": 0.6667,
    }
    assert result["byMethod"] == [
        {"method": "PIX", "offered": 5, "paid": 2, "conversionRate": 0.4},
        {"method": "CREDIT_CARD", "offered": 4, "paid": 1, "conversionRate": 0.25},
        {"method": "MBWAY", "offered": 1, "paid": 0, "conversionRate": 0.0},
        {"method": "MULTIBANCO", "offered": 0, "paid": 0, "conversionRate": 0.0},
        {"method": "BOLETO", "offered": 1, "paid": 1, "conversionRate": 1.0},
        {"method": "CRYPTO", "offered": 0, "paid": 0, "conversionRate": 0.0},
    ]
    assert result["outcomes"] == {
        "expired": {"count": 1, "share": 0.125},
        "failed": {"count": 1, "share": 0.125},
        "cancelled": {"count": 1, "share": 0.125},
        "refunded": {"count": 0, "share": 0.0},
        "disputed": {"count": 2, "share": 0.25},
    }
    assert result["volume"] == [
        {"currency": "BRL", "volume": 6_500, "count": 4, "averageTicket": 1_625}
    ]


def test_metrics_add_the_funnel_over_currencies(add, metrics):
    """The funnel and the volumes come from one statement grouped by currency: the funnel is
    their sum, and a currency with nothing paid has no volume entry."""
    day = sao_paulo(MONDAY, 9)
    add(day, 1_000, methods=("MBWAY", "MULTIBANCO"), currency="EUR", paid_after=PAID)
    add(day, 3_000, methods=("PIX",), paid_after=PAID)
    add(day, 2_000, methods=("PIX", "BOLETO"), status=S.EXPIRED)
    add(day, 4_000, methods=("CRYPTO",), currency="USDT", status=S.REFUSED)

    result = metrics(days=1)

    assert result["funnel"]["created"] == 4
    assert result["funnel"]["paid"] == 2
    offered = {entry["method"]: entry["offered"] for entry in result["byMethod"]}
    assert offered == {
        "PIX": 2,
        "CREDIT_CARD": 0,
        "MBWAY": 1,
        "MULTIBANCO": 1,
        "BOLETO": 1,
        "CRYPTO": 1,
    }
    assert result["outcomes"]["expired"]["count"] == result["outcomes"]["failed"]["count"] == 1
    assert result["volume"] == [
        {"currency": "BRL", "volume": 3_000, "count": 1, "averageTicket": 3_000},
        {"currency": "EUR", "volume": 1_000, "count": 1, "averageTicket": 1_000},
    ]


def test_median_time_to_pay_with_odd_and_even_counts(add, metrics):
    for seconds in (600, 60, 120):
        add(sao_paulo(MONDAY, 9), paid_after=timedelta(seconds=seconds))
    add(sao_paulo(MONDAY, 9))  # unpaid: no time to pay

    assert metrics()["medianTimeToPaySeconds"] == 120

    add(sao_paulo(MONDAY, 9), paid_after=timedelta(seconds=901))
    assert metrics()["medianTimeToPaySeconds"] == 360  # (120 + 600) / 2

    add(sao_paulo(MONDAY, 9), paid_after=timedelta(hours=3, milliseconds=400))
    assert metrics()["medianTimeToPaySeconds"] == 600


def test_median_time_to_pay_rounds_halves_up(add, metrics):
    add(sao_paulo(MONDAY, 9), paid_after=timedelta(seconds=10))
    add(sao_paulo(MONDAY, 9, 7), paid_after=timedelta(seconds=11))

    assert metrics()["medianTimeToPaySeconds"] == 11  # 10.5


def test_metrics_for_one_currency(add, metrics):
    add(sao_paulo(MONDAY, 9), 1_000, currency="EUR", paid_after=timedelta(seconds=30))
    add(sao_paulo(MONDAY, 9), 2_001, currency="EUR", paid_after=timedelta(seconds=90))
    add(sao_paulo(MONDAY, 9), 700, currency="EUR")
    add(sao_paulo(MONDAY, 9), 9_999, paid_after=timedelta(hours=1))

    result = metrics(currency="EUR")

    assert result["currency"] == "EUR"
    assert result["funnel"]["created"] == 3
    assert result["funnel"]["paid"] == 2
    assert result["medianTimeToPaySeconds"] == 60
    assert result["volume"] == [
        {"currency": "EUR", "volume": 3_001, "count": 2, "averageTicket": 1_500}
    ]


def test_metrics_with_nothing_in_the_window(metrics):
    result = metrics()

    assert result["funnel"] == {
        "created": 0,
        "awaitingPayment": 0,
        "paid": 0,
        "conversionRate": 0.0,
        "awaitingToPaidRate": 0.0,
    }
    assert [entry["offered"] for entry in result["byMethod"]] == [0] * 6
    assert result["outcomes"]["expired"] == {"count": 0, "share": 0.0}
    assert result["medianTimeToPaySeconds"] is None
    assert result["volume"] == []


def test_the_answer_is_field_for_field_what_the_api_schema_declares(add, stats):
    """`StatsSchema` sends the answer as built, so the answer must be what marshmallow's walk
    of the schema's fields makes of it, in every section."""
    add(sao_paulo(MONDAY, 8), 1_000, currency="EUR", paid_after=PAID, paid_with="MBWAY")
    add(sao_paulo(MONDAY, 9), 2_500, methods=("PIX", "BOLETO"), paid_after=PAID)
    add(sao_paulo(date(2026, 11, 19)), 4_000, paid_after=PAID)
    add(sao_paulo(date(2026, 10, 2)), 700, currency="USD", methods=("CARD",), paid_after=PAID)
    add(sao_paulo(MONDAY, 9), 9_999, status=S.EXPIRED)

    schema = StatsSchema()
    for days in (1, 7, 365):
        result = stats(days)
        assert ma.Schema.dump(schema, result) == result
        assert schema.dump(result) is result
    assert all(result.values())  # every section had something to show
