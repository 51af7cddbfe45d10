"""GET /metrics: HTTP traffic by route template, RQ queues, job timings recorded by the real
worker class, webhook deliveries and the outbox, who may read it, and what it answers when a
source is down."""

import time

import pytest
from redis import Redis
from rq.job import Job

from app import create_app
from app.extensions import get_queue
from app.jobs import maintenance
from app.monitoring import requests as request_metrics
from app.monitoring.jobs import record_job
from tests.ops.scraping import sample, scrape
from tests.support import factories
from tests.support.charges import created
from tests.support.http import assert_error
from worker import AppWorker

CHARGE_ROUTE = "/v1/charges/<charge_id>"


def failing_job() -> None:
    raise RuntimeError("this job always fails")


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


def _run_app_worker(app, redis: Redis, *queue_names: str) -> None:
    """The worker class `python worker.py` runs, in burst mode."""
    with app.app_context():
        AppWorker([get_queue(name) for name in queue_names], connection=redis).work(burst=True)


def test_requests_are_counted_by_route_template_never_by_raw_path(client, api_key):
    before = scrape(client)
    for _ in range(2):
        client.get("/v1/charges/ch_doesnotexist42", headers={"apikey": api_key})
    client.get("/no/such/page/31337")
    after = scrape(client)

    def grew(name, **labels):
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert grew("acme_http_requests_total", method="GET", route=CHARGE_ROUTE, status="404") == 2
    assert grew("acme_http_request_duration_seconds_count", method="GET", route=CHARGE_ROUTE) == 2
    assert grew("acme_http_requests_total", method="GET", route="unmatched", status="404") == 1
    exposition = client.get("/metrics").get_data(as_text=True)
    # Raw paths never become labels (numbers alone could match a sample's timestamp).
    assert "doesnotexist42" not in exposition and "page/31337" not in exposition


def test_queue_depth_and_head_age_come_from_redis(client, app, redis):
    with app.app_context():
        for _ in range(3):
            get_queue("default").enqueue(maintenance.prune_revoked_tokens)
        get_queue("money").enqueue(maintenance.prune_idempotency_keys)
    time.sleep(0.05)
    samples = scrape(client)
    assert sample(samples, "acme_rq_queue_jobs", queue="default", state="queued") == 3
    assert sample(samples, "acme_rq_queue_jobs", queue="money", state="queued") == 1
    assert sample(samples, "acme_rq_queue_jobs", queue="webhooks", state="queued") == 0
    assert sample(samples, "acme_rq_queue_oldest_job_age_seconds", queue="default") >= 0.05
    assert sample(samples, "acme_rq_queue_oldest_job_age_seconds", queue="webhooks") == 0


def test_the_worker_records_run_time_queue_wait_and_outcome_per_job_function(client, app, redis):
    finished = "app.jobs.maintenance.prune_revoked_tokens"
    failed = "tests.ops.test_metrics.failing_job"
    with app.app_context():
        get_queue("default").enqueue(maintenance.prune_revoked_tokens)
        get_queue("default").enqueue(failing_job)
    time.sleep(0.3)  # both wait at least this long in the queue
    _run_app_worker(app, redis, "default")

    samples = scrape(client)
    assert sample(samples, "acme_job_runs_total", function=finished, outcome="finished") == 1
    assert sample(samples, "acme_job_runs_total", function=failed, outcome="failed") == 1
    assert sample(samples, "acme_job_duration_seconds_count", function=finished) == 1
    assert sample(samples, "acme_job_duration_seconds_bucket", function=finished, le="+Inf") == 1
    assert sample(samples, "acme_job_queue_wait_seconds_sum", function=finished) >= 0.3
    assert sample(samples, "acme_job_queue_wait_seconds_bucket", function=failed, le="0.25") == 0
    assert sample(samples, "acme_job_queue_wait_seconds_bucket", function=failed, le="+Inf") == 1
    assert sample(samples, "acme_rq_queue_jobs", queue="default", state="failed") == 1


def test_recording_a_job_never_raises_when_redis_is_down(app, redis, caplog):
    with app.app_context():
        job = get_queue("default").enqueue(maintenance.prune_revoked_tokens)
    unreachable = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    record_job(unreachable, Job.fetch(job.id, connection=redis), "finished")
    assert "job metrics not recorded" in caplog.text


def test_webhook_outcomes_and_the_outbox_come_from_the_database(
    client, app, api_key, receiver, redis
):
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201
    receiver.reply(500)
    created(client, api_key)
    created(client, api_key)

    waiting = scrape(client)
    assert sample(waiting, "acme_outbox_unrelayed_events") == 4  # charge.created, payment.created
    assert sample(waiting, "acme_outbox_oldest_unrelayed_age_seconds") > 0
    assert sample(waiting, "acme_rq_queue_jobs", queue="webhooks", state="queued") >= 1

    _run_app_worker(app, redis, "webhooks")
    sent = scrape(client)
    assert sample(sent, "acme_outbox_unrelayed_events") == 0
    assert sample(sent, "acme_webhook_deliveries", mode="test", status="DELIVERED") == 1
    assert sample(sent, "acme_webhook_deliveries", mode="test", status="PENDING") == 1
    assert sample(sent, "acme_webhook_deliveries", mode="live", status="FAILED") == 0
    assert sample(sent, "acme_webhook_delivery_overdue_seconds") == 0
    assert (
        sample(
            sent,
            "acme_job_runs_total",
            function="app.jobs.webhooks.send_due_deliveries",
            outcome="finished",
        )
        == 1  # one engine run sent both: the first relay job took all four events
    )


def test_with_a_token_only_its_bearer_may_scrape(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "METRICS_TOKEN", "scrape-me-0123456789")
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "scrape-me-0123456789"},
    ):
        response = client.get("/metrics", headers=headers)
        assert_error(response, 401, "authentication_error", "unauthorized")
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert scrape(client, {"Authorization": "Bearer scrape-me-0123456789"})


def test_without_a_token_metrics_are_not_served_in_production(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "APP_ENV", "production")
    assert_error(client.get("/metrics"), 404, "not_found_error", "not_found")
    monkeypatch.setitem(app.config, "METRICS_TOKEN", "scrape-me-0123456789")
    assert scrape(client, {"Authorization": "Bearer scrape-me-0123456789"})


def test_metrics_need_no_api_key_and_are_not_in_the_api_document(client):
    assert client.get("/metrics").status_code == 200
    assert "/metrics" not in client.get("/v1/openapi.json").json["paths"]


def test_with_redis_down_the_rest_is_still_served(app, redis):
    broken = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
            "SQLALCHEMY_ENGINE_OPTIONS": app.config["SQLALCHEMY_ENGINE_OPTIONS"],
            "REDIS_URL": "redis://127.0.0.1:1/0",
        }
    )
    samples = scrape(broken.test_client())
    assert sample(samples, "acme_metrics_source_up", source="redis") == 0
    assert sample(samples, "acme_metrics_source_up", source="database") == 1
    assert sample(samples, "acme_metrics_source_up", source="requests") == 1
    assert ("acme_outbox_unrelayed_events", frozenset()) in samples
    assert not any(name.startswith("acme_rq_") for name, _ in samples)


def test_with_the_database_down_the_rest_is_still_served(app, redis, tmp_path):
    broken = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/missing-dir/acme.db",
            "SQLALCHEMY_ENGINE_OPTIONS": {},
            "REDIS_URL": app.config["REDIS_URL"],
        }
    )
    samples = scrape(broken.test_client())
    assert sample(samples, "acme_metrics_source_up", source="database") == 0
    assert sample(samples, "acme_metrics_source_up", source="redis") == 1
    assert ("acme_rq_workers", frozenset()) in samples


def test_a_metrics_failure_never_fails_the_request(client, monkeypatch):
    def broken_labels(*_):
        raise RuntimeError("metrics are broken")

    monkeypatch.setattr(request_metrics.REQUESTS, "labels", broken_labels)
    assert client.get("/healthz").status_code == 200
