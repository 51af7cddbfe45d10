"""`first_row`, `all_rows` and `detached_copy`: a statement run straight on the pool answers
exactly what the session would, commits as it runs, and never leaves a connection in
autocommit for the next transaction; one that commits unflushed runs only alone."""

import sqlite3
from datetime import UTC, date
from unittest import mock

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import _ConnectionFairy

from app.extensions import db
from app.models import Account, KeyMode, Transaction, TransactionStatus
from app.models.pooled import all_rows, detached_copy, first_row, unflushed_commit
from tests.support import factories
from tests.support.charges import created, pay, raw
from tests.support.rows import update_row
from tests.support.transactions import open_after

# Built once, as `first_row` asks: a value the statement carries itself, a parameter, and
# columns the session types (an enum, a UTC time); a write that answers no row.
STATUS_OF = sa.select(sa.literal("charge"), Transaction.status, Transaction.paid_at).where(
    Transaction.id == sa.bindparam("row_id")
)
RENAME = (
    sa.update(Account)
    .where(Account.id == sa.bindparam("account"))
    .values(name=sa.bindparam("new_name"))
)


def _paid_charge(app, client, api_key) -> str:
    charge_id = raw(created(client, api_key, metadata={"order": "42"})["id"])
    assert pay(client, api_key, f"ch_{charge_id}").status_code == 200
    update_row(
        app,
        Transaction,
        charge_id,
        due_date=date(2026, 12, 24),
        due_terms={"date": "2026-12-24", "days_valid_after": 30},
        due_original_amount=1234,
    )
    return charge_id


def _columns(row: Transaction) -> dict:
    return {prop.key: getattr(row, prop.key) for prop in sa.inspect(Transaction).column_attrs}


def test_a_copy_holds_every_column_as_the_session_loads_it(app, client, account_id, api_key):
    charge_id = _paid_charge(app, client, api_key)
    with app.app_context():
        copy = detached_copy(Transaction, charge_id, account_id=account_id, mode=KeyMode.TEST)
        loaded = db.session.get(Transaction, charge_id)
        assert _columns(copy) == _columns(loaded)
        assert {key: type(value) for key, value in _columns(copy).items()} == {
            key: type(value) for key, value in _columns(loaded).items()
        }
    assert copy.status is TransactionStatus.PAID
    assert copy.metadata_ == {"order": "42", "description": "Pedido 42"}
    assert copy.paid_at.tzinfo is UTC and copy.due_date == date(2026, 12, 24)
    assert copy.due_terms == {"date": "2026-12-24", "days_valid_after": 30}
    state = sa.inspect(copy)
    assert state.detached and state.identity == (charge_id,)


def test_a_row_outside_the_scope_or_missing_is_none(app, client, account_id, api_key):
    charge_id = raw(created(client, api_key)["id"])
    other = factories.make_account(app, "Outra")
    with app.app_context():
        assert detached_copy(Transaction, charge_id, account_id=other, mode=KeyMode.TEST) is None
        assert (
            detached_copy(Transaction, charge_id, account_id=account_id, mode=KeyMode.LIVE) is None
        )
        assert detached_copy(Transaction, "nope", account_id=account_id, mode=KeyMode.TEST) is None


def test_the_read_runs_alone_in_autocommit_and_the_connection_goes_back_transactional(
    app, client, account_id, api_key
):
    charge_id = raw(created(client, api_key)["id"])
    checked_in = []
    with app.app_context():
        engine = db.engine

    def note_checkin(dbapi_connection, _record):
        checked_in.append(_autocommits(dbapi_connection))

    sa.event.listen(engine, "checkin", note_checkin)
    try:
        with app.app_context():
            _, opened = open_after(
                app,
                f"SELECT {Transaction.__tablename__}.id",
                lambda: detached_copy(
                    Transaction, charge_id, account_id=account_id, mode=KeyMode.TEST
                ),
            )
    finally:
        sa.event.remove(engine, "checkin", note_checkin)
    assert opened == [False]
    assert checked_in == [False]


def test_a_failed_read_discards_its_connection(app, client, account_id, api_key):
    charge_id = raw(created(client, api_key)["id"])
    discarded = []
    with app.app_context():
        engine = db.engine

    def note_invalidated(_dbapi_connection, _record, error):
        discarded.append(error is not None)

    sa.event.listen(engine, "invalidate", note_invalidated)
    try:
        with app.app_context(), pytest.raises(Exception):  # noqa: B017 (the drivers differ: no object() is sent)
            detached_copy(Transaction, object(), account_id=account_id, mode=KeyMode.TEST)
    finally:
        sa.event.remove(engine, "invalidate", note_invalidated)
    assert discarded == [False]  # invalidated by the read itself, not by the pool's error
    with app.app_context():
        copy = detached_copy(Transaction, charge_id, account_id=account_id, mode=KeyMode.TEST)
    assert copy.id == charge_id


def _autocommits(dbapi_connection) -> bool:
    if isinstance(dbapi_connection, sqlite3.Connection):
        return dbapi_connection.isolation_level is None
    return dbapi_connection.autocommit


def test_first_row_types_its_columns_and_a_write_commits_as_it_runs(
    app, client, account_id, api_key
):
    charge_id = _paid_charge(app, client, api_key)
    with app.app_context():
        kind, status, paid_at = first_row(STATUS_OF, {"row_id": charge_id})
        assert (kind, status, paid_at) == (
            "charge",
            TransactionStatus.PAID,
            db.session.get(Transaction, charge_id).paid_at,
        )
        assert paid_at.tzinfo is UTC
        assert first_row(STATUS_OF, {"row_id": "nope"}) is None
        db.session.commit()  # the session's read began a transaction, which a write would join
        assert first_row(RENAME, {"account": account_id, "new_name": "Padaria Nova"}) is None
    with app.app_context():
        assert db.session.get(Account, account_id).name == "Padaria Nova"


def test_inside_an_open_transaction_it_runs_there_and_sees_what_that_wrote(
    app, client, account_id, api_key
):
    charge_id = raw(created(client, api_key)["id"])
    scope = {"account_id": account_id, "mode": KeyMode.TEST}
    checked_out = []
    with app.app_context():
        engine = db.engine

    def note_checkout(*_):
        checked_out.append(True)

    with app.app_context():
        db.session.execute(
            sa.update(Transaction).where(Transaction.id == charge_id).values(customer_name="Ana")
        )
        sa.event.listen(engine, "checkout", note_checkout)
        try:
            assert detached_copy(Transaction, charge_id, **scope).customer_name == "Ana"
        finally:
            sa.event.remove(engine, "checkout", note_checkout)
        assert checked_out == []  # no second connection from the pool
        assert first_row(RENAME, {"account": account_id, "new_name": "Padaria Nova"}) is None
        db.session.rollback()
        assert detached_copy(Transaction, charge_id, **scope).customer_name is None
        assert db.session.get(Account, account_id).name == "Padaria São João"  # nothing early


# A read that commits unflushed: what `set_config` answered in its transaction.
UNFLUSHED_SETTING = sa.select(sa.literal_column("setting")).select_from(unflushed_commit())


@pytest.mark.postgres  # synchronous_commit is PostgreSQL's
def test_a_statement_that_commits_unflushed_runs_only_alone(app, account_id):
    """Alone, the setting holds for its own transaction and its connection keeps the server's;
    in the session's open transaction it would reach every write there, so it is refused."""
    connections = []
    cursor = _ConnectionFairy.cursor

    def noting(pooled, *args, **kwargs):
        connections.append(pooled.dbapi_connection)
        return cursor(pooled, *args, **kwargs)

    with app.app_context():
        with mock.patch.object(_ConnectionFairy, "cursor", noting):
            assert first_row(UNFLUSHED_SETTING, {}) == ("off",)
        [connection] = connections
        assert connection.execute("SHOW synchronous_commit").fetchone() == ("on",)
        connection.rollback()
        db.session.get(Account, account_id)  # the read begins the session's transaction
        with pytest.raises(ValueError, match="transaction of its own"):
            first_row(UNFLUSHED_SETTING, {})
        db.session.rollback()


# Several rows, ordered, with columns the session types.
STATUSES_OF_ACCOUNT = (
    sa.select(Transaction.id, Transaction.status, Transaction.created_at)
    .where(Transaction.account_id == sa.bindparam("account_id"))
    .order_by(Transaction.created_at, Transaction.id)
)


def test_all_rows_answers_every_row_typed_outside_or_inside_a_transaction(
    app, client, account_id, api_key
):
    paid_id = _paid_charge(app, client, api_key)
    waiting_id = raw(created(client, api_key)["id"])
    with app.app_context():
        expected = [
            (row.id, row.status, row.created_at)
            for row in db.session.scalars(
                sa.select(Transaction)
                .where(Transaction.account_id == account_id)
                .order_by(Transaction.created_at, Transaction.id)
            )
        ]
        db.session.rollback()
        assert [row[0] for row in expected] == [paid_id, waiting_id]
        assert expected[0][1] is TransactionStatus.PAID

        assert all_rows(STATUSES_OF_ACCOUNT, {"account_id": account_id}) == expected
        assert not db.session().in_transaction()  # it ran on the pool
        assert all_rows(STATUSES_OF_ACCOUNT, {"account_id": "nobody"}) == []

        db.session.execute(
            sa.update(Transaction).where(Transaction.id == waiting_id).values(status="CANCELLED")
        )
        inside = all_rows(STATUSES_OF_ACCOUNT, {"account_id": account_id})
        assert inside[1][1] is TransactionStatus.CANCELLED  # it saw the open transaction's write
        assert all(row[2].tzinfo is UTC for row in inside)
        db.session.rollback()
