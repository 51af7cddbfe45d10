"""`outside_transaction`: lone statements in autocommit, never a caller's work committed
early."""

import pytest
import sqlalchemy as sa

from app.extensions import db, outside_transaction
from app.models import Account
from tests.support import factories
from tests.support.transactions import open_after

READ = f"SELECT {Account.__tablename__}.name"


def _name(account_id: str) -> str:
    return db.session.scalar(sa.select(Account.name).where(Account.id == account_id))


def test_a_read_runs_in_autocommit_and_the_next_statement_in_a_transaction(app):
    account_id = factories.make_account(app, "Loja")

    def read_then_write():
        with app.app_context():
            with outside_transaction():
                assert _name(account_id) == "Loja"
            db.session.get(Account, account_id).name = "Loja Nova"
            assert _name(account_id) == "Loja Nova"  # autoflushed in the transaction
            db.session.commit()

    _, opened = open_after(app, READ, read_then_write)
    assert opened == [False, True]


def test_a_transaction_already_open_is_used_and_left_uncommitted(app):
    account_id = factories.make_account(app, "Loja")
    with app.app_context():
        db.session.get(Account, account_id).name = "Loja Nova"
        db.session.flush()
        with outside_transaction():
            assert _name(account_id) == "Loja Nova"
        db.session.rollback()
        assert _name(account_id) == "Loja"


def test_an_error_in_the_block_leaves_the_session_usable(app):
    account_id = factories.make_account(app, "Loja")
    with app.app_context():
        with pytest.raises(LookupError), outside_transaction():
            assert _name(account_id) == "Loja"
            raise LookupError
        assert _name(account_id) == "Loja"
