"""GET /v1/wallets/balance and /v1/wallets, with the settlement hold and its release."""

from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa
from rq import SimpleWorker

from app.business_days import start_of_business_day_after
from app.extensions import db, get_queue
from app.jobs import wallets as wallet_jobs
from app.models import KeyMode, SettlementRelease
from app.models.base import utcnow
from app.services import ledger
from tests.support import factories
from tests.support.charges import created, pay
from tests.support.http import assert_error

NET_OF_10000 = 10_000 - 20 - 79  # default Pix fees: 0.20 % + 0.79 %


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _balance(client, api_key, query=""):
    return client.get(f"/v1/wallets/balance{query}", headers={"apikey": api_key})


def _paid_charge(client, api_key, amount=10_000) -> dict:
    charge = created(client, api_key, amount=amount)
    return pay(client, api_key, charge["id"]).get_json()


def _run_release_job(app, redis) -> int:
    with app.app_context():
        queue = get_queue("money")
        job = queue.enqueue(wallet_jobs.release_settlements)
        SimpleWorker([queue], connection=redis).work(burst=True)
        job.refresh()
        assert job.get_status() == "finished"
        return job.return_value()


def test_a_new_account_sees_zero_in_its_primary_currency(client, api_key):
    body = _balance(client, api_key).get_json()
    zero = {"currency": "BRL", "available": 0, "pending": 0, "total": 0}
    assert body == {
        "available": 0,
        "pending": 0,
        "currency": "BRL",
        "next_release_at": None,
        "next_release_amount": None,
        "total": 0,
        "retained": 0,
        "balances": [zero],
        "primary": zero,
    }
    wallets = client.get("/v1/wallets", headers={"apikey": api_key}).get_json()
    assert wallets == [
        {"currency": "BRL", "walletType": "OPERATIONAL", "balance": 0, "pendingBalance": 0}
    ]


def test_settled_money_is_pending_until_its_release(app, client, api_key):
    paid = _paid_charge(client, api_key)
    body = _balance(client, api_key).get_json()
    assert (body["available"], body["pending"], body["total"]) == (0, NET_OF_10000, NET_OF_10000)
    assert body["next_release_amount"] == NET_OF_10000
    release_at = datetime.fromisoformat(body["next_release_at"])
    paid_at = datetime.fromisoformat(paid["created_at"])
    assert release_at == start_of_business_day_after(paid_at, 1)
    assert body["primary"] == {
        "currency": "BRL",
        "available": 0,
        "pending": NET_OF_10000,
        "total": NET_OF_10000,
    }
    wallets = client.get("/v1/wallets", headers={"apikey": api_key}).get_json()
    assert wallets == [
        {
            "currency": "BRL",
            "walletType": "OPERATIONAL",
            "balance": 0,
            "pendingBalance": NET_OF_10000,
        }
    ]


def test_the_cron_job_releases_due_tranches_once(app, client, api_key, redis):
    _paid_charge(client, api_key)
    _paid_charge(client, api_key, amount=20_000)
    later = _paid_charge(client, api_key, amount=5_000)
    with app.app_context():
        tranches = db.session.scalars(sa.select(SettlementRelease)).all()
        for tranche in tranches:
            tranche.release_at = utcnow() - timedelta(seconds=1)
            if tranche.reference_id == later["id"].removeprefix("ch_"):
                tranche.release_at = utcnow() + timedelta(hours=1)
        db.session.commit()

    assert _run_release_job(app, redis) == 2
    body = _balance(client, api_key).get_json()
    net_20000 = 20_000 - 40 - 158
    net_5000 = 5_000 - 10 - 40
    assert body["available"] == NET_OF_10000 + net_20000
    assert body["pending"] == net_5000
    assert body["next_release_amount"] == net_5000
    assert _run_release_job(app, redis) == 0
    assert _balance(client, api_key).get_json()["available"] == NET_OF_10000 + net_20000
    with app.app_context():
        assert ledger.check() == []


def test_a_fixed_delay_can_replace_business_days(app, client, api_key, monkeypatch):
    monkeypatch.setitem(app.config, "SETTLEMENT_HOLD", "3600s")
    paid = _paid_charge(client, api_key)
    body = _balance(client, api_key).get_json()
    lag = datetime.fromisoformat(body["next_release_at"]) - datetime.fromisoformat(
        paid["created_at"]
    )
    assert timedelta(seconds=3599) < lag < timedelta(seconds=3610)


def test_the_flat_shape_for_one_currency(client, api_key):
    _paid_charge(client, api_key)
    for query in ("?currency=BRL", "?currency=brl"):
        body = _balance(client, api_key, query).get_json()
        assert set(body) == {
            "available",
            "pending",
            "currency",
            "next_release_at",
            "next_release_amount",
        }
        assert (body["currency"], body["pending"]) == ("BRL", NET_OF_10000)
    unknown = _balance(client, api_key, "?currency=EUR").get_json()
    assert unknown == {
        "available": 0,
        "pending": 0,
        "currency": "EUR",
        "next_release_at": None,
        "next_release_amount": None,
    }


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("?currency=R$", "currency"),
        ("?currency=B", "currency"),
        ("?currency=BRLBRLBRL", "currency"),
        ("?currency=BRL&currency=EUR", "currency"),
        ("?mode=live", "mode"),
    ],
)
def test_malformed_queries_are_400(client, api_key, query, param):
    response = _balance(client, api_key, query)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


@pytest.mark.parametrize("path", ["/v1/wallets/balance", "/v1/wallets"])
@pytest.mark.parametrize("key", [None, "ak_test_wrong", " ak_test_padded "])
def test_a_missing_or_invalid_key_is_401_never_404(client, path, key):
    headers = {} if key is None else {"apikey": key}
    assert_error(client.get(path, headers=headers), 401, "authentication_error", "unauthorized")


def test_live_and_test_balances_are_separate(app, client, account_id, api_key):
    _paid_charge(client, api_key)
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    assert _balance(client, live_key).get_json()["pending"] == 0
    other = factories.make_api_key(app, factories.make_account(app, "Other"))
    assert _balance(client, other).get_json()["pending"] == 0
