"""The overview's figures: 30 São Paulo calendar days of paid volume (not business days, as
the stats count), the next releases summed per moment and currency, and the payouts waiting
for approval per currency; for one account and mode only."""

from datetime import UTC, date, datetime, timedelta

import pytest

from app.extensions import db
from app.models import (
    KeyMode,
    Origin,
    PayoutStatus,
    Transaction,
    TransactionStatus,
)
from app.services import overview
from tests.support import factories
from tests.support import ledger_rows as rows

NOW = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)  # Monday, after the Friday 20/11 holiday
W = PayoutStatus


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


def test_daily_volume_covers_thirty_calendar_days_from_sao_paulo_midnight(app, account_id):
    first_day = date(2026, 10, 25)
    rows.payment(
        app, account_id, rows.sao_paulo(first_day), 100
    )  # 03:00 UTC: the first day's start
    rows.payment(app, account_id, rows.sao_paulo(first_day) - timedelta(seconds=1), 999)  # 24/10
    rows.payment(app, account_id, rows.sao_paulo(date(2026, 11, 20), 12), 200)  # a holiday counts
    rows.payment(app, account_id, datetime(2026, 11, 23, 2, 59, tzinfo=UTC), 300)  # 22/11 in SP
    rows.payment(app, account_id, NOW, 400)
    rows.payment(app, account_id, NOW - timedelta(hours=1), 500, currency="USD")
    rows.payment(app, account_id, NOW - timedelta(hours=1), 600, mode=KeyMode.LIVE)
    rows.payment(app, factories.make_account(app, "Alheia"), NOW - timedelta(hours=1), 700)

    with app.app_context():
        points = overview.daily_volume(account_id, KeyMode.TEST, NOW)

    assert len(points) == overview.CHART_DAYS
    assert (points[0]["date"], points[-1]["date"]) == ("2026-10-25", "2026-11-23")
    assert {p["date"]: p["currencies"] for p in points if p["currencies"]} == {
        "2026-10-25": {"BRL": 100},
        "2026-11-20": {"BRL": 200},
        "2026-11-22": {"BRL": 300},
        "2026-11-23": {"BRL": 400, "USD": 500},
    }


def test_payments_today_count_from_sao_paulo_midnight(app, account_id):
    rows.payment(app, account_id, datetime(2026, 11, 23, 3, 0, tzinfo=UTC), 1_000)
    rows.payment(app, account_id, datetime(2026, 11, 23, 2, 59, tzinfo=UTC), 2_000)  # yesterday
    with app.app_context():
        db.session.add(
            Transaction(
                account_id=account_id,
                mode=KeyMode.TEST,
                origin=Origin.PAYMENTS,
                status=TransactionStatus.REFUSED,
                amount=3_000,
                currency="BRL",
                payment_methods=["CARD"],
                created_at=NOW - timedelta(hours=1),
            )
        )
        db.session.commit()
        today = overview.payments_today(account_id, KeyMode.TEST, NOW)
    assert today == overview.PaymentsToday(
        day=date(2026, 11, 23), created=2, paid=1, failed=1, paid_volume={"BRL": 1_000}
    )


def test_upcoming_releases_sum_each_moment_per_currency_soonest_first(app, account_id):
    at = NOW + timedelta(days=1)
    rows.pending_release(app, account_id, 1_000, at)
    rows.pending_release(app, account_id, 250, at)
    rows.pending_release(app, account_id, 40, at, currency="USD")
    rows.pending_release(app, account_id, 3_000, at - timedelta(hours=5))
    rows.pending_release(app, account_id, 7_000, at - timedelta(hours=9), released_at=NOW)
    rows.pending_release(app, account_id, 8_000, at, mode=KeyMode.LIVE)
    rows.pending_release(app, factories.make_account(app, "Alheia"), 9_000, at)
    for day in range(2, 6):
        rows.pending_release(app, account_id, 100 * day, at + timedelta(days=day))

    with app.app_context():
        upcoming = overview.upcoming_releases(account_id, KeyMode.TEST)

    assert [(r.release_at, r.currency, r.amount) for r in upcoming] == [
        (at - timedelta(hours=5), "BRL", 3_000),
        (at, "BRL", 1_250),
        (at, "USD", 40),
        (at + timedelta(days=2), "BRL", 200),
        (at + timedelta(days=3), "BRL", 300),
    ]


def test_pending_payouts_per_currency(app, account_id):
    rows.payout(app, account_id, 10_000)
    rows.payout(app, account_id, 5_000)
    rows.payout(app, account_id, 700, currency="USDT")
    for status in (W.APPROVED, W.PROCESSING, W.COMPLETED, W.FAILED, W.REJECTED, W.CANCELLED):
        rows.payout(app, account_id, 99_000, status=status)
    rows.payout(app, account_id, 88_000, mode=KeyMode.LIVE)
    rows.payout(app, factories.make_account(app, "Alheia"), 77_000)

    with app.app_context():
        assert overview.pending_payouts(account_id, KeyMode.TEST) == [
            overview.PendingPayouts("BRL", 2, 15_000),
            overview.PendingPayouts("USDT", 1, 700),
        ]
        assert overview.pending_payouts(account_id, KeyMode.LIVE) == [
            overview.PendingPayouts("BRL", 1, 88_000)
        ]
