"""A merchant with paid transactions to refund, and the calls a refund goes through."""

from dataclasses import dataclass

import sqlalchemy as sa

from app.cli import check_ledger
from app.config import PAYMENT_METHODS
from app.extensions import db
from app.jobs.refunds import poll_refunds
from app.models import Event, Refund, Transaction
from app.services import ledger, releases
from tests.support import charges, factories
from tests.support.payments import paid, refund
from tests.support.payouts import run_jobs

PIX_PAYOUT_FEE = 100  # default schedule: R$ 1,00 per Pix-out, charged by passFeeToTenant


@dataclass(frozen=True)
class Merchant:
    account_id: str
    api_key: str


def merchant(app, monkeypatch) -> Merchant:
    """A test-mode merchant whose charges cost no fees and whose settlements release at once
    (on `release`), so a wallet holds exactly what was paid; payout fees stay as configured."""
    schedule = dict(app.config["FEE_SCHEDULE"])
    free = {"fixed": 0, "bps": 0}
    schedule["charges"] = {
        method: {"provider": free, "platform": free} for method in PAYMENT_METHODS
    }
    monkeypatch.setitem(app.config, "FEE_SCHEDULE", schedule)
    monkeypatch.setitem(app.config, "SETTLEMENT_HOLD", "0s")
    account_id = factories.make_account(app)
    return Merchant(account_id=account_id, api_key=factories.make_api_key(app, account_id))


def release(app) -> None:
    """Release every settled tranche to available (the hold is 0 s)."""
    with app.app_context():
        releases.release_due()
        db.session.commit()


def paid_payment(app, redis, client, merchant: Merchant, *, released=True, **overrides) -> dict:
    """A payment created on /v1/payments and paid in the sandbox (PIX unless `method=`),
    its money released to available unless `released=False`; the GET shape."""
    payment = paid(app, redis, client, merchant.api_key, **overrides)
    if released:
        release(app)
    return payment


def fund(app, client, merchant: Merchant, amount: int) -> None:
    """Add `amount` to the BRL available balance through a paid charge of its own."""
    charge = charges.created(client, merchant.api_key, amount=amount)
    assert charges.pay(client, merchant.api_key, charge["id"]).status_code == 200
    release(app)


def available(client, merchant: Merchant, currency: str = "BRL") -> int:
    response = client.get(
        f"/v1/wallets/balance?currency={currency}", headers={"apikey": merchant.api_key}
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["available"]


def refunded(client, merchant: Merchant, payment_id: str, **body) -> dict:
    """A refund the API accepted (201)."""
    response = refund(client, merchant.api_key, payment_id, **body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def list_refunds(client, merchant: Merchant, payment_id: str):
    return client.get(f"/v1/payments/{payment_id}/refunds", headers={"apikey": merchant.api_key})


def poll(app) -> int:
    """One run of the `rq cron` polling job."""
    with app.app_context():
        return poll_refunds()


def submit_and_poll(app, redis) -> None:
    """The submit jobs enqueued after commit, then one polling run."""
    run_jobs(app, redis)
    poll(app)


def refund_row(app, refund_id: str) -> Refund:
    with app.app_context():
        row = db.session.get(Refund, refund_id)
        db.session.expunge(row)
        return row


def refund_rows(app, transaction_id: str) -> list[Refund]:
    with app.app_context():
        rows = db.session.scalars(
            sa.select(Refund).where(Refund.transaction_id == charges.raw(transaction_id))
        ).all()
        db.session.expunge_all()
        return rows


def update_refund(app, refund_id: str, **values) -> None:
    """Move a refund's clock behind the API's back (the polling job's grace)."""
    with app.app_context():
        db.session.execute(sa.update(Refund).where(Refund.id == refund_id).values(**values))
        db.session.commit()


def update_transaction(app, transaction_id: str, **values) -> None:
    """Move a transaction's state or clock behind the API's back (disputes, windows)."""
    charges.update_row(app, transaction_id, **values)


def transaction_row(app, transaction_id: str) -> Transaction:
    with app.app_context():
        row = db.session.get(Transaction, charges.raw(transaction_id))
        db.session.expunge(row)
        return row


def events_of(app, transaction_id: str, event_type: str) -> list[dict]:
    """The data of every `event_type` event of the transaction, oldest first."""
    with app.app_context():
        return db.session.scalars(
            sa.select(Event.data)
            .where(Event.subject_id == charges.raw(transaction_id), Event.type == event_type)
            .order_by(Event.created_at)
        ).all()


def assert_ledger_clean(app) -> None:
    """The service's own proof and `flask ledger check` both agree the books balance."""
    with app.app_context():
        assert ledger.check() == []
    result = app.test_cli_runner().invoke(check_ledger)
    assert result.exit_code == 0, result.output
    assert "ledger ok" in result.output
