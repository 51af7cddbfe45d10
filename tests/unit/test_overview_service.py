"""The overview's figures: 30 São Paulo calendar days of paid volume (not business days, as
the stats count), the next releases summed per moment and currency, and the payouts waiting
for approval per currency; for one account and mode only."""

import uuid
from datetime import UTC, date, datetime, timedelta

import pytest

from app.extensions import db
from app.models import (
    KeyMode,
    LedgerAccount,
    Origin,
    SettlementRelease,
    Transaction,
    TransactionStatus,
    Withdrawal,
    WithdrawalStatus,
    WithdrawalType,
)
from app.services import ledger, overview
from app.services.business_days import SAO_PAULO
from app.services.ledger import Line
from tests.support import factories

NOW = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)  # Monday, after the Friday 20/11 holiday
W = WithdrawalStatus


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


def _paid(app, account_id: str, created_at: datetime, amount: int, **values) -> None:
    with app.app_context():
        db.session.add(
            Transaction(
                account_id=account_id,
                mode=values.get("mode", KeyMode.TEST),
                origin=Origin.PAYMENTS,
                status=TransactionStatus.PAID,
                amount=amount,
                currency=values.get("currency", "BRL"),
                payment_methods=["PIX"],
                paid_with="PIX",
                created_at=created_at,
                finalised_at=created_at,
                paid_at=created_at + timedelta(minutes=1),
            )
        )
        db.session.commit()


def _tranche(app, account_id: str, amount: int, release_at: datetime, **values) -> None:
    """Pending money of a wallet (created by the posting) with its scheduled release."""
    mode, currency = values.get("mode", KeyMode.TEST), values.get("currency", "BRL")
    with app.app_context():
        ledger.post(
            account_id=account_id,
            mode=mode,
            currency=currency,
            kind="charge_settlement",
            reference_id=uuid.uuid4().hex,
            description="Settlement",
            lines=[
                Line(LedgerAccount.PENDING, amount),
                Line(LedgerAccount.PROVIDER_CLEARING, -amount),
            ],
        )
        db.session.add(
            SettlementRelease(
                wallet_id=ledger.locked_wallet(account_id, mode, currency).id,
                reference_id=uuid.uuid4().hex,
                amount=amount,
                release_at=release_at,
                released_at=values.get("released_at"),
            )
        )
        db.session.commit()


def _payout(app, account_id: str, amount: int, status=W.PENDING, **values) -> None:
    with app.app_context():
        db.session.add(
            Withdrawal(
                account_id=account_id,
                mode=values.get("mode", KeyMode.TEST),
                status=status,
                type=WithdrawalType.PIX,
                amount=amount,
                fee=0,
                currency=values.get("currency", "BRL"),
            )
        )
        db.session.commit()


def _sao_paulo(day: date, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=SAO_PAULO).astimezone(UTC)


def test_daily_volume_covers_thirty_calendar_days_from_sao_paulo_midnight(app, account_id):
    first_day = date(2026, 10, 25)
    _paid(app, account_id, _sao_paulo(first_day), 100)  # 03:00 UTC: the first day's start
    _paid(app, account_id, _sao_paulo(first_day) - timedelta(seconds=1), 999)  # 24/10
    _paid(app, account_id, _sao_paulo(date(2026, 11, 20), 12), 200)  # a holiday counts
    _paid(app, account_id, datetime(2026, 11, 23, 2, 59, tzinfo=UTC), 300)  # 22/11 in SP
    _paid(app, account_id, NOW, 400)
    _paid(app, account_id, NOW - timedelta(hours=1), 500, currency="USD")
    _paid(app, account_id, NOW - timedelta(hours=1), 600, mode=KeyMode.LIVE)
    _paid(app, factories.make_account(app, "Alheia"), NOW - timedelta(hours=1), 700)

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
    _paid(app, account_id, datetime(2026, 11, 23, 3, 0, tzinfo=UTC), 1_000)
    _paid(app, account_id, datetime(2026, 11, 23, 2, 59, tzinfo=UTC), 2_000)  # yesterday
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
    _tranche(app, account_id, 1_000, at)
    _tranche(app, account_id, 250, at)
    _tranche(app, account_id, 40, at, currency="USD")
    _tranche(app, account_id, 3_000, at - timedelta(hours=5))
    _tranche(app, account_id, 7_000, at - timedelta(hours=9), released_at=NOW)
    _tranche(app, account_id, 8_000, at, mode=KeyMode.LIVE)
    _tranche(app, factories.make_account(app, "Alheia"), 9_000, at)
    for day in range(2, 6):
        _tranche(app, account_id, 100 * day, at + timedelta(days=day))

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
    _payout(app, account_id, 10_000)
    _payout(app, account_id, 5_000)
    _payout(app, account_id, 700, currency="USDT")
    for status in (W.APPROVED, W.PROCESSING, W.COMPLETED, W.FAILED, W.REJECTED, W.CANCELLED):
        _payout(app, account_id, 99_000, status)
    _payout(app, account_id, 88_000, mode=KeyMode.LIVE)
    _payout(app, factories.make_account(app, "Alheia"), 77_000)

    with app.app_context():
        assert overview.pending_payouts(account_id, KeyMode.TEST) == [
            overview.PendingPayouts("BRL", 2, 15_000),
            overview.PendingPayouts("USDT", 1, 700),
        ]
        assert overview.pending_payouts(account_id, KeyMode.LIVE) == [
            overview.PendingPayouts("BRL", 1, 88_000)
        ]
