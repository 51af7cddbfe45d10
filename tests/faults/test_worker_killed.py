"""A worker killed mid-job (SIGKILL): nothing finishes the job, RQ
does not run it again, and the `rq cron` sweeps recover it once its lease or silence has run
out. Guaranteed: the webhook is delivered (at least once, every time with the same delivery
id) and its delivery row ends DELIVERED once; the payout reaches the provider under the same
idempotency reference each time, is booked once and completes once."""

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.extensions import db, get_queue
from app.jobs import payouts as payout_jobs
from app.jobs import webhooks as webhook_jobs
from app.models import Event, LedgerPosting, Payout, WebhookDelivery
from app.models.base import utcnow
from app.services import ledger
from app.services.payouts.processing import STUCK_AFTER
from tests.support import charges, payouts
from tests.support.processes import kill_group, wait_for
from tests.support.rows import update_row

pytestmark = pytest.mark.slow
RECEIVER_STALLS_SECONDS = 20


def test_a_delivery_whose_worker_died_mid_send_is_sent_again_with_its_id_and_recorded_once(
    app, client, app_redis, receiver, workers, monkeypatch
):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    with app.app_context():
        webhook_jobs.relay_events()  # its funding, from before it had an endpoint
    _register(client, shop.api_key, receiver.url)
    receiver.reply(200, delay=RECEIVER_STALLS_SECONDS)  # the first POST hangs, then 200s
    charge = charges.created(client, shop.api_key)
    killed = workers.start(WEBHOOK_TIMEOUT_SECONDS=str(RECEIVER_STALLS_SECONDS + 10))
    wait_for(lambda: receiver.received, 30, "the worker to POST the delivery")
    kill_group(killed)
    (delivery,) = _deliveries(app)
    assert (delivery.status, delivery.attempts) == ("PROCESSING", 1)
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 0  # its lease still holds: nobody else sends

    _lease_runs_out(app, delivery.id)
    workers.start()
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 1  # what `rq cron` runs every 15 s
    wait_for(lambda: _deliveries(app)[0].status == "DELIVERED", 30, "the second attempt")

    (delivery,) = _deliveries(app)
    assert delivery.attempts == 2 and delivery.lease_expires_at is None
    first, second = receiver.received
    assert first.headers["X-Acme-Delivery-Id"] == second.headers["X-Acme-Delivery-Id"]
    assert json.loads(first.body)["id"] == json.loads(second.body)["id"]
    assert json.loads(second.body)["data"]["object"]["id"] == charge["id"]
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 0
    assert len(receiver.received) == 2


def test_a_payout_whose_worker_died_at_the_provider_is_paid_and_booked_once(
    app, client, app_redis, workers, monkeypatch, tmp_path
):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    requested = payouts.request(client, shop, amount=10_000).get_json()
    payout_id = requested["id"]
    calls, gate = tmp_path / "payout-calls.log", tmp_path / "payout-gate"
    held = {"FAULT_PAYOUT_CALLS": str(calls), "FAULT_PAYOUT_GATE": str(gate)}
    gate.touch()
    approved = client.post(
        f"/v1/admin/withdrawals/{payout_id}/approve",
        headers=payouts.staff_headers(app, client),
    )
    assert approved.status_code == 200, approved.get_json()
    available_after_debit = payouts.available(client, shop)

    killed = workers.start("tests.faults.held_payout_worker", **held)
    wait_for(lambda: calls.exists() and calls.read_text(), 30, "the payout to reach the provider")
    kill_group(killed)
    assert _payout(app, payout_id).status == "PROCESSING"
    with app.app_context():
        assert payout_jobs.sweep_payouts() == 0  # its sender may still be alive: left alone

    gate.unlink()
    _sender_silent_for_long(app, payout_id)
    workers.start("tests.faults.held_payout_worker", **held)
    with app.app_context():
        get_queue("money").enqueue(payout_jobs.sweep_payouts)  # as `rq cron` does
    wait_for(lambda: _payout(app, payout_id).status == "COMPLETED", 30, "the payout to complete")

    assert calls.read_text().split() == [payout_id, payout_id]  # same idempotency key
    assert _postings(app, payout_id) == ["payout_completion", "payout_debit"]
    assert payouts.available(client, shop) == available_after_debit
    assert _event_types(app, payout_id).count("payout.paid") == 1
    with app.app_context():
        assert payout_jobs.sweep_payouts() == 0
        assert ledger.check() == []


def _register(client, api_key: str, url: str) -> None:
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()


def _deliveries(app) -> list[WebhookDelivery]:
    with app.app_context():
        return db.session.scalars(sa.select(WebhookDelivery)).all()


def _lease_runs_out(app, delivery_id: str) -> None:
    """The dead sender's lease (twice the timeout, and a margin) is over: move it to now."""
    update_row(app, WebhookDelivery, delivery_id, lease_expires_at=utcnow() - timedelta(seconds=1))


def _sender_silent_for_long(app, payout_id: str) -> None:
    """STUCK_AFTER has passed since the dead sender last touched the payout."""
    update_row(app, Payout, payout_id, updated_at=utcnow() - STUCK_AFTER - timedelta(seconds=1))


def _payout(app, payout_id: str) -> Payout:
    with app.app_context():
        return db.session.get(Payout, payout_id)


def _postings(app, payout_id: str) -> list[str]:
    with app.app_context():
        return sorted(
            db.session.scalars(
                sa.select(LedgerPosting.kind).where(LedgerPosting.reference_id == payout_id)
            )
        )


def _event_types(app, payout_id: str) -> list[str]:
    with app.app_context():
        return db.session.scalars(sa.select(Event.type).where(Event.subject_id == payout_id)).all()
