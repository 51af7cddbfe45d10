"""The fraud/velocity guard: live charges per payer and per account, in a window."""

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.models.transaction import OPEN_CHARGE_CONDITION
from app.services.transactions import fraud
from app.services.transactions.lifecycle import AWAITING_PAYMENT
from tests.support import factories, payments
from tests.support.charges import CPF, OTHER_CPF, create, created, update_row
from tests.support.http import assert_error, count_rows


@pytest.fixture
def limits(app, monkeypatch):
    monkeypatch.setitem(app.config, "FRAUD_MAX_LIVE_CHARGES_PER_CUSTOMER", 2)
    monkeypatch.setitem(app.config, "FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT", 4)
    monkeypatch.setitem(app.config, "FRAUD_VELOCITY_WINDOW_SECONDS", 600)


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


def _for(payer: str) -> dict:
    return {"customer": {"name": "Ana", "document": payer}}


def test_a_payer_over_the_limit_gets_403_fraud_code(app, client, api_key, limits):
    created(client, api_key, **_for(CPF))
    created(client, api_key, customer={"name": "Ana"}, expected_payer_tax_id=CPF)
    refused = create(client, api_key, **_for(CPF))
    error = assert_error(refused, 403, "permission_error", "fraud.customer_velocity_exceeded")
    assert error["code"].startswith("fraud.")
    assert count_rows(app, Transaction) == 2
    assert created(client, api_key, **_for(OTHER_CPF))["status"] == "pending"


def test_the_account_over_its_limit_gets_the_second_fraud_code(client, api_key, limits):
    for _ in range(4):
        created(client, api_key)
    refused = create(client, api_key)
    assert_error(refused, 403, "permission_error", "fraud.account_velocity_exceeded")


@pytest.mark.parametrize(
    "change",
    [
        {"status": TransactionStatus.EXPIRED},
        {"status": TransactionStatus.CANCELLED},
        {"status": TransactionStatus.PAID},
        {"expires_at": "past"},
        {"created_at": "before the window"},
    ],
    ids=["expired", "cancelled", "paid", "past-expiry-not-yet-swept", "outside-window"],
)
def test_only_live_charges_in_the_window_count(app, client, api_key, limits, change):
    first = created(client, api_key, **_for(CPF))["id"]
    created(client, api_key, **_for(CPF))
    values = dict(change)
    if values.get("expires_at") == "past":
        values["expires_at"] = utcnow() - timedelta(seconds=1)
    if values.get("created_at"):
        values["created_at"] = utcnow() - timedelta(seconds=601)
    update_row(app, first, **values)
    assert created(client, api_key, **_for(CPF))["status"] == "pending"


def test_payments_still_being_finalised_count_too(app, client, api_key, limits):
    """A payment is PENDING until its job runs (with a provisional deadline); it is live all
    the same."""
    for _ in range(2):
        assert payments.create(client, api_key, customerDocument=CPF).status_code == 201
    refused = payments.create(client, api_key, customerDocument=CPF)
    assert_error(refused, 403, "permission_error", "fraud.customer_velocity_exceeded")
    for _ in range(2):
        assert payments.create(client, api_key).status_code == 201
    refused = payments.create(client, api_key, paymentMethods=["BOLETO"])
    assert_error(refused, 403, "permission_error", "fraud.account_velocity_exceeded")
    assert count_rows(app, Transaction) == 4


def test_other_accounts_do_not_count(app, client, api_key, limits):
    other_key = factories.make_api_key(app, factories.make_account(app, "Other"))
    for _ in range(2):
        created(client, other_key, **_for(CPF))
    assert created(client, api_key, **_for(CPF))["status"] == "pending"


@pytest.mark.postgres
def test_concurrent_requests_for_one_payer_cannot_pass_the_limit_together(app, api_key, limits):
    """On PostgreSQL, ten simultaneous charges for one payer with a limit of 2 make exactly 2."""

    def send(_):
        with app.test_client() as client:
            return create(client, api_key, **_for(CPF)).status_code

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = sorted(pool.map(send, range(10)))
    assert statuses == [201, 201] + [403] * 8
    assert count_rows(app, Transaction) == 2


def test_the_open_charges_index_holds_exactly_the_charges_awaiting_payment():
    named = set(re.findall(r"'([A-Z_]+)'", str(OPEN_CHARGE_CONDITION)))
    assert named == {str(status) for status in AWAITING_PAYMENT}


@pytest.mark.postgres
def test_the_account_count_reads_the_open_charges_index(app, api_key):
    now = utcnow()
    counted = fraud.ACCOUNT_COUNT.params(
        account_id="a", mode=KeyMode.TEST, now=now, since=now - timedelta(hours=1), limit=1000
    )
    with app.app_context():
        sql = counted.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
        db.session.execute(sa.text("SET LOCAL enable_seqscan = off"))
        plan = db.session.execute(sa.text(f"EXPLAIN {sql}")).scalars().all()
        db.session.rollback()
    assert any("ix_transactions_open" in line for line in plan), plan
