"""The delivery engine (issue 22): due deliveries claimed in batches, sent at once by a pool
of senders, each recorded exactly once; an endpoint never gets more than its cap, two
engines never take the same delivery, and a run never retries what it sent itself."""

import threading
from collections import Counter

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import WebhookDelivery
from app.models.base import utcnow
from app.services.webhooks import delivery as webhook_delivery
from tests.support import factories
from tests.support.charges import created
from tests.support.processes import wait_for
from tests.support.slow_endpoint import Mode, slow_endpoint


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _register(client, api_key, url: str) -> str:
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def _deliveries(app) -> list[WebhookDelivery]:
    with app.app_context():
        return db.session.scalars(sa.select(WebhookDelivery)).all()


def test_one_run_sends_to_several_endpoints_at_once_and_records_each_delivery_once(
    app, client, api_key, receiver
):
    for number in range(6):
        _register(client, api_key, f"{receiver.url}/{number}")
        receiver.reply(200, delay=0.3)
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        assert webhook_jobs.send_due_deliveries() == 6

    assert receiver.most_at_once > 1  # sent concurrently, not one after another
    deliveries = _deliveries(app)
    assert {(d.status, d.attempts) for d in deliveries} == {("DELIVERED", 1)}
    sent_ids = [request.headers["X-Acme-Delivery-Id"] for request in receiver.received]
    assert sorted(sent_ids) == sorted(d.id for d in deliveries)  # each exactly once


def test_a_batch_claim_gives_an_endpoint_no_more_than_its_cap_and_leaves_the_rest_due(
    app, client, api_key, receiver, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_ENDPOINT_CONCURRENCY", 2)
    _register(client, api_key, receiver.url)
    other = _register(client, api_key, f"{receiver.url}/other")
    for _ in range(5):
        created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        due_before = {d.id: d.next_retry_at for d in _deliveries(app)}
        claimed = webhook_delivery.claim_due(10, not_attempted_since=utcnow())
        db.session.commit()
    by_endpoint = Counter(delivery.endpoint_id for delivery in claimed)
    assert sorted(by_endpoint.values()) == [2, 2]  # both endpoints, two each
    assert other in by_endpoint
    waiting = [d for d in _deliveries(app) if d.status == "PENDING"]
    assert len(waiting) == 6
    assert all(d.attempts == 0 and d.next_retry_at == due_before[d.id] for d in waiting)


def test_one_run_sends_an_endpoints_backlog_as_room_frees_up(
    app, client, api_key, receiver, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_ENDPOINT_CONCURRENCY", 2)
    _register(client, api_key, receiver.url)
    for _ in range(5):
        created(client, api_key)
        receiver.reply(200, delay=0.1)
    with app.app_context():
        webhook_jobs.relay_events()
        assert webhook_jobs.send_due_deliveries() == 5
    assert receiver.most_at_once <= 2
    assert {(d.status, d.attempts) for d in _deliveries(app)} == {("DELIVERED", 1)}


def test_two_engines_claiming_at_once_never_take_the_same_delivery(
    app, client, api_key, receiver, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_ENDPOINT_CONCURRENCY", 3)
    for number in range(3):
        _register(client, api_key, f"{receiver.url}/{number}")
    for _ in range(3):
        created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
    start = threading.Barrier(2)
    claimed: list[list[str]] = []

    def engine() -> None:
        with app.app_context():
            start.wait(10)
            taken = webhook_delivery.claim_due(9, not_attempted_since=utcnow())
            claimed.append([delivery.id for delivery in taken])
            db.session.commit()

    threads = [threading.Thread(target=engine) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    taken = [delivery_id for batch in claimed for delivery_id in batch]
    assert len(taken) == len(set(taken))  # nobody took a delivery twice
    processing = [d for d in _deliveries(app) if d.status == "PROCESSING"]
    assert sorted(d.id for d in processing) == sorted(taken)
    per_endpoint: dict[str, int] = {}
    for delivery in processing:
        per_endpoint[delivery.endpoint_id] = per_endpoint.get(delivery.endpoint_id, 0) + 1
    assert max(per_endpoint.values()) <= 3


def test_a_run_with_more_due_than_its_senders_asks_for_another_run(
    app, client, api_key, receiver, redis, monkeypatch
):
    from app.extensions import WEBHOOK_QUEUE, get_queue

    monkeypatch.setitem(app.config, "WEBHOOK_SENDERS", 1)
    monkeypatch.setattr(webhook_delivery, "ENGINE_RUN_SECONDS", 0)  # claims once, then stops
    _register(client, api_key, receiver.url)
    created(client, api_key)
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        queue = get_queue(WEBHOOK_QUEUE)
        queue.empty()
        assert webhook_jobs.send_due_deliveries() == 1
        assert [job.func_name for job in queue.get_jobs()] == [
            "app.jobs.webhooks.send_due_deliveries"
        ]


def test_an_answer_is_recorded_while_another_attempt_of_the_run_is_still_open(
    app, client, api_key, receiver, monkeypatch
):
    monkeypatch.setattr(webhook_delivery, "ENGINE_RUN_SECONDS", 0)  # no claim to record with
    with slow_endpoint(Mode.HOLD) as slow:
        _register(client, api_key, slow.url)
        prompt = _register(client, api_key, receiver.url)
        created(client, api_key)
        with app.app_context():
            webhook_jobs.relay_events()

        def engine() -> None:
            with app.app_context():
                webhook_jobs.send_due_deliveries()

        run = threading.Thread(target=engine)
        run.start()
        try:
            wait_for(lambda: len(slow.open_requests()) == 1, 30, "the held attempt")
            wait_for(
                lambda: _status_of(app, prompt) == "DELIVERED", 30, "the prompt answer recorded"
            )
            assert len(slow.open_requests()) == 1  # recorded before the run's last answer
        finally:
            slow.release()
            run.join(60)
    assert {d.status for d in _deliveries(app)} == {"DELIVERED"}


def _status_of(app, endpoint_id: str) -> str:
    with app.app_context():
        status = db.session.scalar(
            sa.select(WebhookDelivery.status).where(WebhookDelivery.endpoint_id == endpoint_id)
        )
        db.session.remove()
        return status
