"""Webhooks end to end: endpoints API, relay, signed delivery to a real receiver through a
real RQ worker, retries, dead letters, resends, rotation, deletion and Redis outages."""

import hashlib
import hmac
import json
import re
import threading
import time
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa
from redis.exceptions import ConnectionError as RedisConnectionError
from rq import SimpleWorker

from app import queueing
from app.config import PROJECT_ROOT, instance_path
from app.errors import InvalidRequest
from app.extensions import QUEUE_NAMES, WEBHOOK_QUEUE, db, get_queue
from app.jobs import webhooks as webhook_jobs
from app.models import KeyMode, WebhookDelivery, WebhookEndpoint
from app.models.base import utcnow
from app.services import events
from app.services.webhooks import addresses, relay, transport
from app.services.webhooks import delivery as webhook_delivery
from tests.support import factories
from tests.support.charges import created, get, pay
from tests.support.http import assert_error
from tests.support.rows import update_row

HEX64 = re.compile(r"[0-9a-f]{64}")


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _register(client, api_key, url, events=("charge.created", "payment.created")):
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": list(events)},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _run_worker(app, redis) -> None:
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]
        SimpleWorker(queues, connection=redis).work(burst=True)


def _deliveries(app, **filters) -> list[WebhookDelivery]:
    with app.app_context():
        return db.session.scalars(
            sa.select(WebhookDelivery).filter_by(**filters).order_by(WebhookDelivery.created_at)
        ).all()


def _make_due(app, delivery_id) -> None:
    update_row(app, WebhookDelivery, delivery_id, next_retry_at=utcnow() - timedelta(seconds=1))


def _deliver(app, delivery_id) -> str | None:
    with app.app_context():
        return webhook_jobs.deliver(delivery_id)


def _canonical_signature_ok(header: str, body: bytes, secret: str) -> bool:
    """Verified here from the contract alone, not with the service's signing code."""
    parts = dict(item.split("=", 1) for item in header.split(","))
    expected = hmac.new(
        secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(parts["v1"], expected)


def _legacy_signature_ok(header: str, body: bytes, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(header, expected)


def test_the_catalog_is_public_and_flags_legacy_names(client):
    catalog = client.get("/v1/webhooks/event-catalog").get_json()
    names = {entry["event"]: entry for entry in catalog}
    for name in ("charge.created", "charge.paid", "payout.failed", "med_case.created"):
        assert "legacy" not in names[name] and names[name]["description"]
    for name in ("payment.completed", "withdrawal.failed", "payment.status_changed"):
        assert names[name]["legacy"] is True


def test_an_endpoint_is_created_with_a_secret_shown_once_and_kept_encrypted(
    app, client, api_key, receiver
):
    endpoint = _register(client, api_key, receiver.url)
    assert HEX64.fullmatch(endpoint["secret"])
    assert (endpoint["status"], endpoint["url"]) == ("ACTIVE", receiver.url)
    listed = client.get("/v1/webhooks/endpoints", headers={"apikey": api_key}).get_json()
    assert listed["data"][0]["id"] == endpoint["id"] and "secret" not in listed["data"][0]
    with app.app_context():
        stored = db.session.get(WebhookEndpoint, endpoint["id"]).secret_ciphertext
    assert endpoint["secret"] not in stored


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"url": "https://example.com/h", "events": ["charge.exploded"]}, "events"),
        ({"url": "https://example.com/h", "events": []}, "events"),
        ({"url": "ftp://example.com/h", "events": ["charge.paid"]}, "url"),
        ({"url": "https://user:pw@example.com/h", "events": ["charge.paid"]}, "url"),
        ({"url": "https://example.com/h"}, "events"),
    ],
)
def test_bad_registrations_are_400(client, api_key, body, param):
    response = client.post("/v1/webhooks/endpoints", json=body, headers={"apikey": api_key})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hooks",
        "https://127.0.0.1/hooks",
        "https://localhost/hooks",
        "https://10.0.0.7/hooks",
        "https://169.254.169.254/latest",
        "https://[::1]/hooks",
    ],
)
def test_live_endpoints_must_be_public_https(app, client, account_id, url):
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": ["charge.paid"]},
        headers={"apikey": live_key},
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")


def test_patch_changes_only_what_is_sent(client, api_key, receiver):
    endpoint = _register(client, api_key, receiver.url)
    response = client.patch(
        f"/v1/webhooks/endpoints/{endpoint['id']}",
        json={"status": "INACTIVE"},
        headers={"apikey": api_key},
    ).get_json()
    assert response == {
        "id": endpoint["id"],
        "url": receiver.url,
        "events": ["charge.created", "payment.created"],
        "status": "INACTIVE",
    }
    bad = client.patch(
        f"/v1/webhooks/endpoints/{endpoint['id']}",
        json={"events": ["nope"]},
        headers={"apikey": api_key},
    )
    assert_error(bad, 400, "invalid_request_error", "invalid_request", param="events")


def test_a_patch_without_a_body_changes_nothing_and_the_document_says_it_may(
    client, api_key, receiver
):
    """Found by schemathesis: the document declared the body required, the service took a
    PATCH without one."""
    endpoint = _register(client, api_key, receiver.url)
    response = client.patch(f"/v1/webhooks/endpoints/{endpoint['id']}", headers={"apikey": api_key})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["status"] == "ACTIVE"
    document = client.get("/v1/openapi.json").get_json()
    patch = document["paths"]["/v1/webhooks/endpoints/{endpoint_id}"]["patch"]
    assert patch["requestBody"]["required"] is False


def test_another_accounts_endpoint_is_404(app, client, api_key, receiver):
    endpoint = _register(client, api_key, receiver.url)
    other = factories.make_api_key(app, factories.make_account(app, "Other"))
    for method, path in (
        ("patch", f"/v1/webhooks/endpoints/{endpoint['id']}"),
        ("delete", f"/v1/webhooks/endpoints/{endpoint['id']}"),
        ("post", f"/v1/webhooks/endpoints/{endpoint['id']}/rotate-secret"),
    ):
        response = getattr(client, method)(path, json={}, headers={"apikey": other})
        assert_error(response, 404, "not_found_error", "not_found")


def test_events_are_delivered_signed_in_both_families(app, client, api_key, receiver, redis):
    endpoint = _register(client, api_key, receiver.url)
    charge = created(client, api_key)
    _run_worker(app, redis)

    assert len(receiver.received) == 2
    by_type = {r.headers["X-Acme-Event-Type"]: r for r in receiver.received}
    canonical = by_type["charge.created"]
    assert _canonical_signature_ok(
        canonical.headers["X-Acme-Signature"], canonical.body, endpoint["secret"]
    )
    envelope = json.loads(canonical.body)
    assert envelope["id"].startswith("evt_") and envelope["object"] == "event"
    assert envelope["type"] == "charge.created"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", envelope["api_version"])
    assert envelope["data"]["object"] == get(client, api_key, charge["id"]).get_json()
    datetime.fromisoformat(envelope["created_at"])

    legacy = by_type["payment.created"]
    assert _legacy_signature_ok(legacy.headers["X-Acme-Signature"], legacy.body, endpoint["secret"])
    body = json.loads(legacy.body)
    assert body["event"] == "payment.created"
    assert body["data"]["transactionId"] == charge["id"]
    delivery_ids = {r.headers["X-Acme-Delivery-Id"] for r in receiver.received}
    assert delivery_ids == {d.id for d in _deliveries(app, status="DELIVERED")}


def test_only_subscribed_events_and_aliases_are_delivered(app, client, api_key, receiver, redis):
    _register(client, api_key, receiver.url, events=("payment.status_changed",))
    charge = created(client, api_key)
    pay(client, api_key, charge["id"])
    _run_worker(app, redis)
    types = sorted(r.headers["X-Acme-Event-Type"] for r in receiver.received)
    assert types == ["payment.completed", "payment.created"]


def test_a_500_is_retried_with_backoff_and_a_2xx_is_not(app, client, api_key, receiver, redis):
    _register(client, api_key, receiver.url, events=("charge.created",))
    receiver.reply(500)
    created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("PENDING", 1, 500)
    wait = delivery.next_retry_at - delivery.last_attempt_at
    assert timedelta(seconds=27) <= wait <= timedelta(seconds=33)
    assert delivery.last_response_body == "nope"

    assert _deliver(app, delivery.id) is None  # not due yet: nothing is sent
    _make_due(app, delivery.id)
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 1  # enqueued; the worker sends it
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert (delivery.status, delivery.attempts) == ("DELIVERED", 2)
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 0
    assert len(receiver.received) == 2


def test_retry_after_is_honoured(app, client, api_key, receiver, redis):
    _register(client, api_key, receiver.url, events=("charge.created",))
    receiver.reply(429, {"Retry-After": "120"})
    created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert delivery.status == "PENDING"
    wait = delivery.next_retry_at - delivery.last_attempt_at
    assert timedelta(seconds=120) <= wait < timedelta(seconds=122)


def test_a_hanging_endpoint_times_out_and_is_retried(
    app, client, api_key, receiver, redis, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_TIMEOUT_SECONDS", 1)
    _register(client, api_key, receiver.url, events=("charge.created",))
    receiver.reply(200, delay=2)
    created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert delivery.status == "PENDING"
    assert "Timed out" in delivery.last_error and delivery.last_status_code is None


def test_after_the_last_attempt_the_delivery_is_dead_lettered_and_owners_told(
    app, client, account_id, api_key, receiver, redis, monkeypatch
):
    monkeypatch.setitem(app.config, "MAIL_BACKEND", "file")
    monkeypatch.setitem(app.config, "WEBHOOK_FAILING_ENDPOINT_ALERT", 1)
    factories.make_member(app, account_id)
    _register(client, api_key, receiver.url, events=("charge.created",))
    for _ in range(15):
        receiver.reply(503)
    created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    for _ in range(14):
        _make_due(app, delivery.id)
        _deliver(app, delivery.id)
    (delivery,) = _deliveries(app)
    assert (delivery.status, delivery.attempts, delivery.next_retry_at) == ("FAILED", 15, None)
    _run_worker(app, redis)  # the owners' alert is a job enqueued after the dead letter
    dead = client.get("/v1/webhooks/deliveries?status=FAILED", headers={"apikey": api_key})
    assert dead.get_json()["total"] == 1
    mails = list((instance_path() / "mail").glob("*.eml"))
    assert any(b"keeps failing" in m.read_bytes() for m in mails)
    stats = client.get("/v1/webhooks/stats", headers={"apikey": api_key}).get_json()
    assert stats == {
        "total": 1,
        "PENDING": 0,
        "PROCESSING": 0,
        "DELIVERED": 0,
        "FAILED": 1,
        "CANCELLED": 0,
    }

    resent = client.post(
        f"/v1/webhooks/deliveries/{delivery.id}/retry", headers={"apikey": api_key}
    )
    assert resent.status_code == 201
    _run_worker(app, redis)
    assert json.loads(receiver.received[-1].body)["id"] == delivery.payload["id"]
    assert _deliveries(app, id=resent.get_json()["id"])[0].status == "DELIVERED"


def test_bulk_recovery_resends_every_failed_delivery_since_a_time(
    app, client, api_key, receiver, redis
):
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    for _ in range(2):
        created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        db.session.execute(sa.update(WebhookDelivery).values(status="FAILED", next_retry_at=None))
        db.session.commit()
    since = (utcnow() - timedelta(hours=1)).isoformat()
    response = client.post(
        f"/v1/webhooks/endpoints/{endpoint['id']}/recover",
        json={"since": since},
        headers={"apikey": api_key},
    )
    assert response.get_json() == {"recovered": 2}
    _run_worker(app, redis)
    assert len(_deliveries(app, status="DELIVERED")) == 2


def test_rotation_switches_the_secret_at_once(app, client, api_key, receiver, redis):
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    rotated = client.post(
        f"/v1/webhooks/endpoints/{endpoint['id']}/rotate-secret",
        json={"id": endpoint["id"]},
        headers={"apikey": api_key},
    ).get_json()
    assert rotated["id"] == endpoint["id"] and HEX64.fullmatch(rotated["secret"])
    created(client, api_key)
    _run_worker(app, redis)
    (request,) = receiver.received
    signature = request.headers["X-Acme-Signature"]
    assert _canonical_signature_ok(signature, request.body, rotated["secret"])
    assert not _canonical_signature_ok(signature, request.body, endpoint["secret"])
    mismatch = client.post(
        f"/v1/webhooks/endpoints/{endpoint['id']}/rotate-secret",
        json={"id": "another"},
        headers={"apikey": api_key},
    )
    assert_error(mismatch, 400, "invalid_request_error", "invalid_request", param="id")


def test_delete_cancels_the_deliveries_still_waiting(app, client, api_key, receiver):
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
    deleted = client.delete(f"/v1/webhooks/endpoints/{endpoint['id']}", headers={"apikey": api_key})
    assert deleted.get_json() == {"deleted": True}
    (delivery,) = _deliveries(app)
    assert delivery.status == "CANCELLED"
    assert client.get("/v1/webhooks/endpoints", headers={"apikey": api_key}).get_json() == {
        "data": []
    }
    assert _deliver(app, delivery.id) is None
    assert receiver.received == []


def test_events_written_while_redis_is_down_are_delivered_after_it_returns(
    app, client, api_key, receiver, redis, monkeypatch
):
    _register(client, api_key, receiver.url, events=("charge.created",))

    def redis_is_down(_name):
        raise RedisConnectionError("Connection refused")

    with monkeypatch.context() as patch:
        patch.setattr("app.queueing.get_queue", redis_is_down)
        charge = created(client, api_key)
    _run_worker(app, redis)
    assert receiver.received == []  # nothing reached the queue
    with app.app_context():
        webhook_jobs.sweep_webhooks()  # rq cron's safety net, once Redis is back
    _run_worker(app, redis)
    (request,) = receiver.received
    assert json.loads(request.body)["data"]["object"]["id"] == charge["id"]


def _relay_runs_queued(app) -> int:
    with app.app_context():
        jobs = get_queue(WEBHOOK_QUEUE).get_jobs()
    return sum(job.func_name == events.RELAY_JOB for job in jobs)


def test_a_burst_of_commits_queues_one_relay_run(app, client, api_key, receiver, redis):
    """Charges made while a relay run waits in the queue add no run: that run reads their
    events. Once it has started, the next commit queues a run of its own."""
    _register(client, api_key, receiver.url, events=("charge.created",))
    mark = queueing.queued_run_key(events.RELAY_JOB)
    first = sorted(created(client, api_key)["id"] for _ in range(3))
    assert _relay_runs_queued(app) == 1
    assert 0 < redis.ttl(mark) <= queueing.QUEUED_RUN_STANDS_SECONDS
    _run_worker(app, redis)
    relayed = sorted(json.loads(r.body)["data"]["object"]["id"] for r in receiver.received)
    assert relayed == first
    assert redis.exists(mark) == 0
    later = created(client, api_key)["id"]
    assert _relay_runs_queued(app) == 1
    _run_worker(app, redis)
    assert json.loads(receiver.received[-1].body)["data"]["object"]["id"] == later


def test_a_queued_relay_run_that_never_starts_stands_only_until_its_mark_expires(
    app, client, api_key, redis
):
    """The queued run was lost (its worker died with it, or its enqueue failed after the
    mark): once the mark has expired, the next commit queues a run again."""
    created(client, api_key)
    with app.app_context():
        get_queue(WEBHOOK_QUEUE).empty()
    created(client, api_key)
    assert _relay_runs_queued(app) == 0  # the mark still stands for the lost run
    mark = queueing.queued_run_key(events.RELAY_JOB)
    redis.pexpire(mark, 1)  # its 10 seconds, shortened
    while redis.exists(mark):
        time.sleep(0.001)
    created(client, api_key)
    assert _relay_runs_queued(app) == 1


def test_a_delivery_is_never_sent_by_two_workers_at_once(app, client, api_key, receiver):
    _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        (delivery,) = _deliveries(app)
        first = webhook_delivery.claim(delivery.id)
        db.session.commit()
        assert first is not None
        assert webhook_delivery.claim(delivery.id) is None
        later = utcnow() + timedelta(minutes=2)  # the first sender died: its lease ran out
        assert webhook_delivery.claim(delivery.id, now=later) is not None
        db.session.rollback()


def test_the_delivery_log_filters_and_refuses_bad_values(app, client, api_key, receiver, redis):
    endpoint = _register(client, api_key, receiver.url)
    created(client, api_key)
    _run_worker(app, redis)
    page = client.get(
        f"/v1/webhooks/deliveries?eventType=charge.created&endpointId={endpoint['id']}&limit=1",
        headers={"apikey": api_key},
    ).get_json()
    assert (page["total"], page["limit"], page["offset"]) == (1, 1, 0)
    (entry,) = page["data"]
    assert entry["eventType"] == "charge.created" and entry["status"] == "DELIVERED"
    assert entry["payload"]["type"] == "charge.created" and entry["deliveredAt"]
    for query, param in (
        ("?status=DONE", "status"),
        ("?limit=101", "limit"),
        ("?offset=-1", "offset"),
        ("?page=2", "page"),
    ):
        response = client.get(f"/v1/webhooks/deliveries{query}", headers={"apikey": api_key})
        assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


def test_live_deliveries_recheck_the_address_before_sending(app, client, api_key, receiver):
    """A live endpoint whose name now resolves to a private address is not called."""
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        db.session.execute(
            sa.update(WebhookEndpoint)
            .where(WebhookEndpoint.id == endpoint["id"])
            .values(mode=KeyMode.LIVE, url=receiver.url.replace("http://", "https://"))
        )
        db.session.commit()
    (delivery,) = _deliveries(app)
    assert _deliver(app, delivery.id) == "PENDING"
    (delivery,) = _deliveries(app)
    assert "private address" in delivery.last_error
    assert receiver.received == []


def test_the_readme_verification_helper_accepts_real_deliveries(
    app, client, api_key, receiver, redis
):
    """The snippet merchants copy from the README verifies both families, with two secrets."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme.split("## Receiving webhooks", 1)[1]
    snippet = section.split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(snippet, namespace)  # noqa: S102 (our own documentation)
    verify = namespace["verify"]
    endpoint = _register(client, api_key, receiver.url)
    created(client, api_key)
    _run_worker(app, redis)
    assert len(receiver.received) == 2
    for request in receiver.received:
        signature = request.headers["X-Acme-Signature"]
        assert verify(request.body, signature, ["0" * 64, endpoint["secret"]])
        assert not verify(request.body + b" ", signature, [endpoint["secret"]])
        assert not verify(request.body, signature, ["0" * 64])


@pytest.mark.parametrize(
    ("header", "low", "high"),
    [
        ("0", 0, 1),
        ("Wed, 21 Oct 2099 07:28:00 -0000", 86_399, 86_401),
        ("soon", 26, 34),
    ],
    ids=["zero", "http-date-far-future-capped", "unparseable-uses-backoff"],
)
def test_retry_after_forms(app, client, api_key, receiver, redis, header, low, high):
    _register(client, api_key, receiver.url, events=("charge.created",))
    receiver.reply(429, {"Retry-After": header})
    created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    wait = (delivery.next_retry_at - delivery.last_attempt_at).total_seconds()
    assert delivery.status == "PENDING" and low <= wait <= high


def test_a_late_answer_from_a_replaced_sender_is_dropped(app, client, api_key, receiver):
    _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        (delivery,) = _deliveries(app)
        assert webhook_delivery.claim(delivery.id) is not None
        db.session.commit()
        later = utcnow() + timedelta(minutes=5)
        assert webhook_delivery.claim(delivery.id, now=later).attempts == 2
        db.session.commit()
        late = webhook_delivery.record(delivery.id, 1, transport.Attempt(500, "boom", None))
        assert (late.status, late.attempts, late.last_status_code) == ("PROCESSING", 2, None)
        done = webhook_delivery.record(delivery.id, 2, transport.Attempt(200, "ok", None))
        assert done.status == "DELIVERED"
        db.session.commit()


def test_a_sender_that_died_on_the_last_attempt_is_dead_lettered_not_resent(
    app, client, api_key, receiver
):
    _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        (delivery,) = _deliveries(app)
        db.session.execute(
            sa.update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery.id)
            .values(status="PROCESSING", attempts=15, lease_expires_at=utcnow())
        )
        db.session.commit()
        assert webhook_delivery.claim(delivery.id, now=utcnow() + timedelta(seconds=1)) is None
        db.session.commit()
    (delivery,) = _deliveries(app)
    assert (delivery.status, delivery.attempts) == ("FAILED", 15)
    assert "never finished" in delivery.last_error
    assert receiver.received == []


def test_an_inactive_endpoint_gets_no_sends_and_no_resends(app, client, api_key, receiver, redis):
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
    client.patch(
        f"/v1/webhooks/endpoints/{endpoint['id']}",
        json={"status": "INACTIVE"},
        headers={"apikey": api_key},
    )
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert delivery.status == "CANCELLED" and receiver.received == []
    resend = client.post(
        f"/v1/webhooks/deliveries/{delivery.id}/retry", headers={"apikey": api_key}
    )
    assert_error(resend, 409, "conflict_error", "endpoint_inactive")


def test_recovering_twice_does_not_duplicate(app, client, api_key, receiver, redis):
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        db.session.execute(sa.update(WebhookDelivery).values(status="FAILED", next_retry_at=None))
        db.session.commit()
    since = (utcnow() - timedelta(hours=1)).isoformat()
    path = f"/v1/webhooks/endpoints/{endpoint['id']}/recover"
    for expected in (1, 0):
        response = client.post(path, json={"since": since}, headers={"apikey": api_key})
        assert response.get_json() == {"recovered": expected}


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "2026-11-01", "soon"])
def test_recover_refuses_a_since_it_cannot_use(client, api_key, receiver, since):
    """A zone that pushes the instant before year 1 used to reach the database (500)."""
    endpoint = _register(client, api_key, receiver.url, events=("charge.created",))
    response = client.post(
        f"/v1/webhooks/endpoints/{endpoint['id']}/recover",
        json={"since": since},
        headers={"apikey": api_key},
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="since")


def test_an_unknown_event_type_filter_is_400(client, api_key):
    response = client.get(
        "/v1/webhooks/deliveries?eventType=charge.exploded", headers={"apikey": api_key}
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="eventType")


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::7f00:1]/hooks",
        "https://[2002:7f00:1::]/hooks",
        "https://[::127.0.0.1]/hooks",
        "https://[::ffff:127.0.0.1]/hooks",
        "https://2130706433/hooks",
    ],
)
def test_addresses_that_embed_a_private_ipv4_are_refused(app, client, account_id, url):
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": ["charge.paid"]},
        headers={"apikey": live_key},
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")


def test_outside_development_test_endpoints_may_not_be_private(
    app, client, api_key, receiver, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TEST_URLS", False)
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": ["charge.paid"]},
        headers={"apikey": api_key},
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")


def test_every_queued_sender_is_limited_to_its_leases(app, client, api_key, receiver, redis):
    """RQ never stops a sender before its attempts' leases end: an engine run's limit is its
    claiming window plus a lease (each attempt ends at its own deadline, within its lease)."""
    _register(client, api_key, receiver.url, events=("charge.created",))
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        jobs = get_queue(WEBHOOK_QUEUE).get_jobs()
        engines = [job for job in jobs if job.func_name == relay.ENGINE_JOB]
        assert len(engines) == 1  # one run for the relay's commit, whatever it fanned out
        assert engines[0].timeout == webhook_delivery.ENGINE_RUN_SECONDS + (
            webhook_delivery.job_timeout()
        )


def test_one_endpoint_never_takes_more_workers_than_its_cap(
    app, client, api_key, receiver, monkeypatch
):
    """Two workers claim deliveries to one endpoint at the same moment: the second waits for
    the first claim's commit (the endpoint's row lock), finds the endpoint full and leaves
    its delivery PENDING for the sweep, not counted as an attempt; another endpoint's
    deliveries are still claimed."""
    monkeypatch.setitem(app.config, "WEBHOOK_ENDPOINT_CONCURRENCY", 1)
    slow = _register(client, api_key, f"{receiver.url}/slow", events=("charge.created",))
    other = _register(client, api_key, f"{receiver.url}/other", events=("charge.created",))
    created(client, api_key)
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
    first, second = _deliveries(app, endpoint_id=slow["id"])
    to_other = _deliveries(app, endpoint_id=other["id"])[0]
    claimed: dict[str, bool] = {}
    first_may_commit = threading.Event()

    def worker(delivery_id: str, commit_when: threading.Event | None = None) -> None:
        with app.app_context():
            claimed[delivery_id] = webhook_delivery.claim(delivery_id) is not None
            if commit_when is not None:
                commit_when.wait(10)
            db.session.commit()

    first_worker = threading.Thread(target=worker, args=(first.id, first_may_commit))
    second_worker = threading.Thread(target=worker, args=(second.id,))
    first_worker.start()
    try:
        wait_until_claimed = utcnow() + timedelta(seconds=10)
        while first.id not in claimed and utcnow() < wait_until_claimed:
            first_worker.join(0.01)
        assert claimed == {first.id: True}  # claimed, its transaction still open
        before_second_claim = utcnow()
        second_worker.start()
        second_worker.join(0.5)
        assert second_worker.is_alive()  # waiting for the first claim to commit
    finally:
        first_may_commit.set()
        first_worker.join(10)
        second_worker.join(10)

    assert claimed == {first.id: True, second.id: False}
    (waiting,) = _deliveries(app, id=second.id)
    assert (waiting.status, waiting.attempts) == ("PENDING", 0)
    assert waiting.next_retry_at >= before_second_claim + webhook_delivery.ENDPOINT_BUSY_WAIT
    with app.app_context():
        assert webhook_delivery.claim(to_other.id) is not None  # another endpoint is not held up
        db.session.commit()
        webhook_delivery.record(first.id, 1, transport.Attempt(200, "ok", None))
        db.session.commit()
        # room again
        assert webhook_delivery.claim(second.id, now=waiting.next_retry_at) is not None
        db.session.rollback()


@pytest.mark.parametrize("url", ["http://[zz]/hooks", "https://[::1/hooks", "http://]/"])
def test_a_malformed_bracketed_host_is_refused_not_a_crash(app, url):
    """`urlsplit` raises on these; the dashboard's form reaches `check_url` without the API's
    pattern in front of it."""
    with app.app_context(), pytest.raises(InvalidRequest) as refused:
        addresses.check_url(url, KeyMode.TEST)
    assert refused.value.param == "url"
