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
    PaymentDayPaidVolume,
    PaymentDayTotal,
    PaymentDayVolume,
    PaymentMonthVolume,
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
    """The fine totals as the service reads them; the coarser reads (each from its own
    projection) must add up to the same."""
    found = grouped(account_id, until, first_day, KEY)
    for by in (COARSE, WINDOW):
        assert grouped(account_id, until, first_day, by) == _project(found, by)
    assert paid_per_day(account_id, until, first_day) == _paid_per_day(found)
    return found


COARSE = ("day", "currency", "paid_with", "paid")
WINDOW = ("currency", "paid_with", "paid")  # read from whole months and single days


def grouped(account_id: str, until: datetime, first_day: date, by: tuple[str, ...]) -> Counter:
    found: Counter = Counter()
    for row in payment_totals.DayTotals(account_id, KeyMode.TEST, until).grouped(first_day, by=by):
        if row.count or row.amount:
            found[(tuple(row[: len(by)]), "count")] += row.count
            found[(tuple(row[: len(by)]), "amount")] += row.amount
    return found


def paid_per_day(account_id: str, until: datetime, first_day: date) -> dict:
    return payment_totals.DayTotals(account_id, KeyMode.TEST, until).paid_per_day(first_day)


def _project(fine: Counter, by: tuple[str, ...]) -> Counter:
    projected: Counter = Counter()
    for (key, what), value in fine.items():
        row = dict(zip(KEY, key, strict=True))
        projected[(tuple(row[name] for name in by), what)] += value
    return +projected


def _paid_per_day(fine: Counter) -> dict:
    """{day: {currency: amount}} of the paid rows whose count is not zero."""
    paid = _project(fine, ("day", "currency", "paid"))
    return _nested(
        (day, currency, paid[((day, currency, True), "amount")])
        for (day, currency, is_paid), what in paid
        if is_paid and what == "count"
    )


def _nested(figures) -> dict:
    nested: dict = {}
    for day, currency, amount in figures:
        nested.setdefault(day, {})[currency] = amount
    return nested


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


def test_windows_across_months_read_whole_months_and_the_days_around_them(app, account_id):
    """A window's totals come from the monthly volumes for its whole months and the daily
    ones for the days before and after them: every first day (the 1st, mid-month, the last
    of a month, the last day) and every end (a 1st, a month's last day, across a new year,
    mid-month) agrees with the recount, folded or not, with changes pending on folded rows,
    and with a transaction of the last day created after `until`."""
    created = [
        (date(2025, 12, 31), 22, "BRL"),
        (date(2026, 1, 1), 1, "EUR"),
        (date(2026, 8, 31), 23, "BRL"),  # 02:00 UTC on 1 September
        (date(2026, 9, 1), 0, "BRL"),
        (date(2026, 9, 15), 12, "EUR"),
        (date(2026, 10, 31), 23, "BRL"),
        (date(2026, 11, 1), 0, "EUR"),
        (date(2026, 11, 22), 9, "BRL"),
        (MONDAY, 8, "BRL"),
        (MONDAY, 8, "EUR"),
    ]
    untils = [
        sao_paulo(date(2026, 1, 1), 12),  # a 1st, the year's first
        sao_paulo(date(2026, 9, 1), 6),  # a 1st
        sao_paulo(date(2026, 10, 31), 23),  # a month's last day, after its last row
        NOW,  # mid-month, with a row of its day created after it
    ]
    first_days = [
        date(2025, 12, 1),
        date(2025, 12, 31),
        date(2026, 1, 1),
        date(2026, 8, 1),
        date(2026, 8, 31),
        date(2026, 9, 1),
        date(2026, 9, 2),
        date(2026, 10, 31),
        date(2026, 11, 1),
        date(2026, 11, 22),
        MONDAY,
    ]
    with app.app_context():
        ids = []
        for number, (day, hour, currency) in enumerate(created):
            paid = {}
            if number % 2 == 0:
                paid = {"status": S.PAID, "paid_with": "PIX", "paid_at": sao_paulo(day, hour)}
            ids.append(
                add(account_id, sao_paulo(day, hour), 100 * (number + 1), currency=currency, **paid)
            )
        add(
            account_id,
            NOW + timedelta(minutes=5),
            7_777,
            status=S.PAID,
            paid_with="PIX",
            paid_at=NOW + timedelta(minutes=6),
        )

        def agrees() -> None:
            for until in untils:
                last_day = until.astimezone(SAO_PAULO).date()
                for first_day in (day for day in first_days if day <= last_day):
                    assert totals(account_id, until, first_day) == recount_from(
                        account_id, until, first_day
                    ), (until, first_day)

        agrees()
        while payment_totals.fold_changes():
            pass
        agrees()
        refunded = db.session.get(Transaction, ids[4])
        refunded.status = S.REFUNDED
        refunded.paid_at = None
        db.session.commit()
        assert pending_changes() > 0
        agrees()
        assert paid_per_day(account_id, NOW, date(2025, 12, 1)) == {
            date(2025, 12, 31): {"BRL": 100},
            date(2026, 8, 31): {"BRL": 300},
            date(2026, 11, 1): {"EUR": 700},
            MONDAY: {"BRL": 900},  # not the 7,777 paid after `until`
        }


def recount_from(account_id: str, until: datetime, first_day: date) -> Counter:
    counted = recount(account_id, until)
    return +Counter({(key, what): n for (key, what), n in counted.items() if key[0] >= first_day})


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


def _migration(name: str):
    spec = importlib.util.spec_from_file_location(
        name, PROJECT_ROOT / f"migrations/versions/{name}.py"
    )
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    return migration


def test_the_migration_backfills_count_as_the_service_does(app, account_id):
    """The migrations' SQL is frozen at their revisions; it must agree with the service's
    rule (SQLite at a fixed UTC-3, exact since 2019), for the totals and every projection."""
    totals_migration = _migration("0013_payment_totals")
    projections_migration = _migration("0016_payment_volume_projections")
    with app.app_context():
        add(account_id, sao_paulo(MONDAY, 1), 100, methods=["PIX", "BOLETO", "PIX"])
        add(account_id, sao_paulo(MONDAY, 23), 200, status=S.PAID, paid_with="PIX", paid_at=NOW)
        add(account_id, sao_paulo(MONDAY, 0), 300, currency="EUR", methods=["MBWAY"])
        add(
            account_id,
            sao_paulo(date(2026, 10, 31), 23),
            400,
            status=S.PAID,
            paid_with="PIX",
            paid_at=NOW,
        )
        add(account_id, sao_paulo(date(2026, 11, 2)), 50)  # the month's row of the first
        payment_totals.rebuild_totals()
        by_service = _folded()

        for model in FOLDED:
            db.session.execute(sa.delete(model))
        dialect = db.engine.dialect.name
        db.session.execute(sa.text(totals_migration.BACKFILL[dialect]))
        db.session.execute(sa.text(totals_migration.BACKFILL_VOLUMES))
        for statement in projections_migration.backfill_statements(dialect):
            db.session.execute(sa.text(statement))
        db.session.commit()
        by_migration = _folded()
    assert by_migration == by_service
    assert [len(rows) for rows in by_service.values()] == [5, 5, 4, 2]
    assert any(row[6] == "BOLETO,PIX" for row in by_service[PaymentDayTotal])


FOLDED = (PaymentDayTotal, PaymentDayVolume, PaymentMonthVolume, PaymentDayPaidVolume)


def _folded() -> dict[type, list[tuple]]:
    """Every folded table's rows, as sorted tuples of their columns."""
    return {
        model: sorted(
            tuple(getattr(row, column.key) for column in model.__table__.columns)
            for row in db.session.execute(sa.select(model)).scalars()
        )
        for model in FOLDED
    }


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
