"""A merchant with money to pay out, and the calls a payout goes through."""

import uuid
from dataclasses import dataclass

from rq import SimpleWorker

from app.config import PAYMENT_METHODS
from app.extensions import QUEUE_NAMES, db, get_queue
from app.models import Account
from app.services import releases
from tests.support import factories
from tests.support.charges import created, pay
from tests.support.http import bearer, login


@dataclass(frozen=True)
class Merchant:
    member: factories.Member
    headers: dict
    api_key: str


def funded_merchant(app, client, monkeypatch, amount: int = 100_000) -> Merchant:
    """An OWNER whose test wallet has `amount` centavos available (paid charges, released)."""
    member = factories.make_member(app)
    api_key = factories.make_api_key(app, member.account_id)
    monkeypatch.setitem(app.config, "FEE_SCHEDULE", _fee_free_charges(app))
    monkeypatch.setitem(app.config, "SETTLEMENT_HOLD", "0s")
    charge = created(client, api_key, amount=amount)
    pay(client, api_key, charge["id"])
    with app.app_context():
        releases.release_due()
        db.session.commit()
    return Merchant(member=member, headers=bearer(login(client, member)), api_key=api_key)


def _fee_free_charges(app) -> dict:
    schedule = dict(app.config["FEE_SCHEDULE"])
    free = {"fixed": 0, "bps": 0}
    schedule["charges"] = {
        method: {"provider": free, "platform": free} for method in PAYMENT_METHODS
    }
    return schedule


def pix_payout(**overrides) -> dict:
    body = {
        "type": "PIX",
        "amount": 10_000,
        "currency": "BRL",
        "pixKey": "ana@example.com",
        "pixKeyType": "EMAIL",
        "description": "Saque semanal",
        "idempotencyKey": uuid.uuid4().hex,
        "test": True,
    }
    body.update(overrides)
    return body


def request(client, merchant: Merchant, **overrides):
    return client.post("/v1/withdrawals", json=pix_payout(**overrides), headers=merchant.headers)


def available(client, merchant: Merchant) -> int:
    body = client.get("/v1/wallets/balance", headers={"apikey": merchant.api_key}).get_json()
    return body["available"]


def staff_headers(app, client) -> dict:
    staff = factories.make_staff(app)
    token = client.post(
        "/v1/auth/login", json={"email": staff.email, "password": staff.password}
    ).get_json()["token"]
    return bearer(token)


def run_jobs(app, redis) -> None:
    """Run what was enqueued after commit (payment finalisation, refunds, payouts, webhook
    relays) with a real RQ worker on every queue, as `python worker.py` with no role does."""
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]
        SimpleWorker(queues, connection=redis).work(burst=True)


def set_account(app, account_id: str, **values) -> None:
    with app.app_context():
        account = db.session.get(Account, account_id)
        for name, value in values.items():
            setattr(account, name, value)
        db.session.commit()
