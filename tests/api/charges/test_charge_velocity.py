"""The fraud/velocity guard: live charges per payer and per account, in a window."""

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa
from redis.exceptions import RedisError

from app.extensions import db
from app.models import KeyMode, Transaction, TransactionStatus, pooled
from app.models.base import utcnow
from app.models.transaction import OPEN_CHARGE_CONDITION
from app.services.transactions import fraud
from app.services.transactions.lifecycle import AWAITING_PAYMENT
from tests.support import factories, payments
from tests.support.charges import CPF, OTHER_CPF, create, created, update_row
from tests.support.http import assert_error, count_rows

ACCOUNT_VELOCITY = fraud.ACCOUNT_VELOCITY


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
def test_the_account_count_can_read_the_open_charges_index(app, api_key):
    """The count's condition implies the partial index's, so the planner may use it. Which
    index it picks on a small table depends on the statistics the other tests left, so the
    table's other plain indexes are dropped for the question, in a transaction rolled back."""
    now = utcnow()
    counted = fraud.ACCOUNT_COUNT.params(
        account_id="a", mode=KeyMode.TEST, now=now, since=now - timedelta(hours=1), limit=1000
    )
    with app.app_context():
        sql = counted.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
        db.session.execute(sa.text("SET LOCAL lock_timeout = '10s'"))
        others = db.session.scalars(
            sa.text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'transactions' "
                "AND indexname LIKE 'ix\\_%' AND indexname <> 'ix_transactions_open'"
            )
        ).all()
        for index in others:
            db.session.execute(sa.text(f'DROP INDEX "{index}"'))
        db.session.execute(sa.text("SET LOCAL enable_seqscan = off"))
        plan = db.session.execute(sa.text(f"EXPLAIN {sql}")).scalars().all()
        db.session.rollback()
    assert others  # the listing, payer, due date, expiry and search indexes
    assert any("ix_transactions_open" in line for line in plan), plan


def _account_counts(monkeypatch) -> list[str]:
    """The account's live charges counted by the guard, noted as each count runs."""
    counted = []
    first_row = pooled.first_row

    def noting(statement, values):
        if statement is fraud.ACCOUNT_COUNT:
            counted.append(values["account_id"])
        return first_row(statement, values)

    monkeypatch.setattr(pooled, "first_row", noting)
    return counted


def test_below_its_limit_the_account_is_counted_once_then_bounded(
    client, api_key, limits, monkeypatch
):
    """The first charge counts the live ones and seeds the bound; the next ones only add to
    it until it would pass the limit, and then the count decides."""
    counted = _account_counts(monkeypatch)
    for _ in range(4):
        created(client, api_key)
    assert len(counted) == 1
    assert_error(create(client, api_key), 403, "permission_error", ACCOUNT_VELOCITY)
    assert len(counted) == 2


def test_charges_no_longer_live_bring_the_bound_back_down(
    app, client, api_key, limits, monkeypatch
):
    charges = [created(client, api_key)["id"] for _ in range(4)]
    for charge_id in charges[:2]:
        update_row(app, charge_id, status=TransactionStatus.PAID)
    counted = _account_counts(monkeypatch)
    created(client, api_key)  # over the bound: counted, 2 live, and the bound brought to 3
    created(client, api_key)  # the bound at 4: not counted
    assert len(counted) == 1
    assert_error(create(client, api_key), 403, "permission_error", ACCOUNT_VELOCITY)
    assert len(counted) == 2
    assert count_rows(app, Transaction) == 6


def test_a_lost_bound_is_seeded_from_the_count_never_from_zero(app, client, api_key, limits, redis):
    for _ in range(4):
        created(client, api_key)
    redis.flushdb()  # Redis restarted without its data
    assert_error(create(client, api_key), 403, "permission_error", ACCOUNT_VELOCITY)
    update_row(app, _any_charge(app), status=TransactionStatus.CANCELLED)
    created(client, api_key)  # the refusal kept no bound: this charge seeds it
    bound = redis.get(fraud.bound_key(_account_of(app), KeyMode.TEST))
    assert int(bound) == 4  # 3 live and this one


def test_with_redis_unreachable_every_charge_is_counted(app, client, api_key, limits, monkeypatch):
    def unreachable():
        raise RedisError("connection refused")

    monkeypatch.setattr(fraud, "get_redis", unreachable)
    counted = _account_counts(monkeypatch)
    for _ in range(4):
        created(client, api_key)
    assert_error(create(client, api_key), 403, "permission_error", ACCOUNT_VELOCITY)
    assert len(counted) == 5


def _account_of(app) -> str:
    with app.app_context():
        return db.session.scalar(sa.select(Transaction.account_id).limit(1))


def _any_charge(app) -> str:
    with app.app_context():
        return db.session.scalar(sa.select(Transaction.id).limit(1))
