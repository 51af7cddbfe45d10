"""The daily payment totals the stats read (issue 22): every flush that writes a transaction
appends its difference, a rollback takes it back, the fold moves it into the totals without
changing any answer, and a rebuild from the transactions, or the migration's backfill, finds
the same totals. Checked against a recount written here, row by row, apart from the service."""

import importlib.util
import re
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy as sa

from app.business_days import SAO_PAULO
from app.config import PROJECT_ROOT
from app.extensions import db
from app.models import (
    KeyMode,
    Origin,
    PaymentDayTotal,
    PaymentDayVolume,
    PaymentTotalChange,
    Transaction,
    TransactionStatus,
)
from app.services.transactions import payment_totals
from tests.support import factories

S = TransactionStatus
MONDAY = date(2026, 11, 23)
NOW = datetime(2026, 11, 23, 22, 0, tzinfo=SAO_PAULO).astimezone(UTC)
KEY = ("day", "currency", "status", "paid_with", "offered", "finalised", "paid")


def sao_paulo(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=SAO_PAULO).astimezone(UTC)


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


def add(account_id: str, created_at: datetime, amount: int = 1_000, **values) -> str:
    transaction = Transaction(
        account_id=account_id,
        mode=values.pop("mode", KeyMode.TEST),
        origin=Origin.PAYMENTS,
        status=values.pop("status", S.WAITING_PAYMENT),
        amount=amount,
        currency=values.pop("currency", "BRL"),
        payment_methods=values.pop("methods", ["PIX"]),
        created_at=created_at,
        **values,
    )
    db.session.add(transaction)
    db.session.commit()
    return transaction.id


def recount(account_id: str, until: datetime = NOW) -> Counter:
    """The oracle: every transaction of the account read back and counted in its row."""
    counted: Counter = Counter()
    for transaction in db.session.scalars(
        sa.select(Transaction).where(
            Transaction.account_id == account_id,
            Transaction.mode == KeyMode.TEST,
            Transaction.created_at <= until,
        )
    ):
        key = (
            transaction.created_at.astimezone(SAO_PAULO).date(),
            transaction.currency,
            transaction.status.value,
            transaction.paid_with or "",
            ",".join(sorted(transaction.payment_methods)),
            transaction.finalised_at is not None,
            transaction.paid_at is not None,
        )
        counted[(key, "count")] += 1
        counted[(key, "amount")] += transaction.amount
    return counted


def totals(account_id: str, until: datetime = NOW, first_day: date = date(2026, 1, 1)) -> Counter:
    """The fine totals as the service reads them; the coarse ones must add up to the same."""
    found: Counter = Counter()
    for row in payment_totals.DayTotals(account_id, KeyMode.TEST, until).grouped(first_day, by=KEY):
        key = tuple(row[: len(KEY)])
        if row.count or row.amount:
            found[(key, "count")] += row.count
            found[(key, "amount")] += row.amount
    assert coarse(account_id, until, first_day) == _project(found)
    return found


COARSE = ("day", "currency", "paid_with", "paid")


def coarse(account_id: str, until: datetime, first_day: date) -> Counter:
    found: Counter = Counter()
    for row in payment_totals.DayTotals(account_id, KeyMode.TEST, until).grouped(
        first_day, by=COARSE
    ):
        if row.count or row.amount:
            found[(tuple(row[: len(COARSE)]), "count")] += row.count
            found[(tuple(row[: len(COARSE)]), "amount")] += row.amount
    return found


def _project(fine: Counter) -> Counter:
    projected: Counter = Counter()
    for (key, what), value in fine.items():
        row = dict(zip(KEY, key, strict=True))
        projected[(tuple(row[name] for name in COARSE), what)] += value
    return +projected


def pending_changes() -> int:
    return db.session.scalar(sa.select(sa.func.count()).select_from(PaymentTotalChange))


def test_each_change_to_a_transaction_moves_it_between_rows_and_the_fold_keeps_the_answer(
    app, account_id
):
    with app.app_context():
        first = add(account_id, sao_paulo(MONDAY, 9), 1_500, methods=["PIX", "BOLETO"])
        second = add(account_id, sao_paulo(MONDAY - timedelta(days=3)), 700, currency="EUR")
        add(account_id, sao_paulo(MONDAY, 10), 300, mode=KeyMode.LIVE)  # another mode
        paid = db.session.get(Transaction, first)
        paid.status, paid.paid_with = S.PAID, "PIX"
        paid.paid_at = paid.finalised_at = sao_paulo(MONDAY, 11)
        db.session.commit()
        expected = recount(account_id)
        assert totals(account_id) == expected
        assert sum(v for (key, what), v in expected.items() if what == "count") == 2

        while payment_totals.fold_changes():
            pass
        assert pending_changes() == 0
        assert totals(account_id) == expected

        moved = db.session.get(Transaction, second)
        moved.status = S.EXPIRED
        moved.created_at = sao_paulo(MONDAY - timedelta(days=1))  # a correction moves its day
        db.session.commit()
        assert totals(account_id) == recount(account_id)

        db.session.delete(db.session.get(Transaction, second))
        db.session.commit()
        assert totals(account_id) == recount(account_id)


def test_a_due_date_charge_paid_with_interest_moves_its_amount_too(app, account_id):
    """Paying a charge with a due date sets its amount to what was paid (fine and interest
    in): the day's total follows the money, not the original."""
    with app.app_context():
        charge_id = add(account_id, sao_paulo(MONDAY, 9), 100_000, due_original_amount=100_000)
        db.session.expire_all()
        charge = db.session.get(Transaction, charge_id)
        charge.status, charge.paid_with, charge.amount = S.PAID, "PIX", 100_167
        charge.paid_at = charge.finalised_at = sao_paulo(MONDAY, 11)
        db.session.commit()
        expected = recount(account_id)
        assert totals(account_id) == expected
        assert sum(v for (key, what), v in expected.items() if what == "amount") == 100_167


def test_a_change_to_an_attribute_never_read_still_leaves_its_old_row(app, account_id):
    """After a commit every attribute is expired: setting the status without reading it
    first must still know the status it replaces (`active_history` on the model)."""
    with app.app_context():
        transaction_id = add(account_id, sao_paulo(MONDAY, 8))
        db.session.expire_all()
        transaction = db.session.get(Transaction, transaction_id)
        db.session.expire(transaction)
        transaction.status = S.CANCELLED
        db.session.commit()
        assert totals(account_id) == recount(account_id)
        assert (
            sum(
                count
                for (key, what), count in totals(account_id).items()
                if key[2] == "WAITING_PAYMENT"
            )
            == 0
        )


def test_a_rolled_back_savepoint_or_transaction_leaves_no_change(app, account_id):
    with app.app_context():
        transaction_id = add(account_id, sao_paulo(MONDAY, 8))
        before = pending_changes()
        transaction = db.session.get(Transaction, transaction_id)
        with db.session.begin_nested() as savepoint:
            transaction.status = S.REFUSED
            db.session.flush()
            savepoint.rollback()
        db.session.commit()
        add_later = Transaction(
            account_id=account_id,
            mode=KeyMode.TEST,
            origin=Origin.PAYMENTS,
            status=S.PENDING,
            amount=5,
            currency="BRL",
            payment_methods=["PIX"],
        )
        db.session.add(add_later)
        db.session.flush()
        db.session.rollback()
        assert pending_changes() == before
        assert totals(account_id) == recount(account_id)


def test_a_transaction_created_after_until_on_its_day_is_left_out(app, account_id):
    with app.app_context():
        add(account_id, NOW - timedelta(minutes=1), 100)
        add(account_id, NOW + timedelta(minutes=1), 9_999)  # the same São Paulo day
        assert totals(account_id, until=NOW) == recount(account_id, until=NOW)
        assert sum(v for (key, what), v in totals(account_id).items() if what == "amount") == 100


def test_a_rebuild_recounts_rows_written_around_the_application(app, account_id):
    with app.app_context():
        add(account_id, sao_paulo(MONDAY, 9), 400)
        db.session.execute(
            sa.text(
                "UPDATE transactions SET status = 'PAID', paid_with = 'PIX', paid_at = created_at"
                " WHERE account_id = :account"
            ),
            {"account": account_id},
        )
        db.session.commit()
        assert totals(account_id) != recount(account_id)  # the UPDATE was not seen

        assert payment_totals.rebuild_totals(account_id) == 1
        assert totals(account_id) == recount(account_id)


def test_the_migration_backfill_counts_as_the_service_does(app, account_id):
    """The migration's SQL is frozen at its revision; it must agree with the service's rule
    (SQLite at a fixed UTC-3, exact since 2019)."""
    spec = importlib.util.spec_from_file_location(
        "payment_totals_migration", PROJECT_ROOT / "migrations/versions/0013_payment_totals.py"
    )
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    with app.app_context():
        add(account_id, sao_paulo(MONDAY, 1), 100, methods=["PIX", "BOLETO", "PIX"])
        add(account_id, sao_paulo(MONDAY, 23), 200, status=S.PAID, paid_with="PIX", paid_at=NOW)
        add(account_id, sao_paulo(MONDAY, 0), 300, currency="EUR", methods=["MBWAY"])
        payment_totals.rebuild_totals()
        by_service = db.session.execute(sa.select(PaymentDayTotal)).scalars().all()
        by_service = sorted(_as_tuple(row) for row in by_service)

        volumes_by_service = _volumes()

        db.session.execute(sa.delete(PaymentDayTotal))
        db.session.execute(sa.delete(PaymentDayVolume))
        db.session.execute(sa.text(migration.BACKFILL[db.engine.dialect.name]))
        db.session.execute(sa.text(migration.BACKFILL_VOLUMES))
        db.session.commit()
        by_migration = sorted(
            _as_tuple(row) for row in db.session.execute(sa.select(PaymentDayTotal)).scalars()
        )
        volumes_by_migration = _volumes()
    assert by_migration == by_service
    assert volumes_by_migration == volumes_by_service
    assert len(volumes_by_service) == 3
    assert any(row[6] == "BOLETO,PIX" for row in by_service)


def _volumes() -> list[tuple]:
    return sorted(
        (row.day, row.currency, row.paid_with, row.paid, row.count, row.amount)
        for row in db.session.execute(sa.select(PaymentDayVolume)).scalars()
    )


def _as_tuple(total: PaymentDayTotal) -> tuple:
    return tuple(getattr(total, name) for name in (*payment_totals.KEY_COLUMNS, "count", "amount"))


def test_the_cron_folds_with_the_payment_jobs(app, account_id):
    from app.jobs import payments

    with app.app_context():
        for hour in range(3):
            add(account_id, sao_paulo(MONDAY, hour))
        expected, pending = recount(account_id), pending_changes()
        assert pending >= 3
        assert payments.fold_payment_totals() == pending
        assert pending_changes() == 0
        assert totals(account_id) == expected


def test_nothing_in_the_app_writes_transactions_around_the_orm():
    """The totals see what the ORM flushes; a bulk or textual write would be missed."""
    around = re.compile(
        r"sa\.(update|delete|insert)\(Transaction\)"
        r"|(UPDATE|INSERT INTO|DELETE FROM) transactions\b",
        re.IGNORECASE,
    )
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in (PROJECT_ROOT / "app").rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if around.search(line)
    ]
    assert found == []
