"""Jobs run by a real RQ worker, and the periodic schedule `rq cron` loads."""

import time
from datetime import timedelta

import pytest
import sqlalchemy as sa
from rq import SimpleWorker
from rq.cron import CronScheduler

from app.extensions import db, get_queue
from app.jobs import maintenance
from app.models import RevokedToken
from app.models.base import utcnow
from tests.support.http import bearer, login
from worker import AppWorker

ITEMS_SWEPT = []


def sweep_that_outlives_its_limit() -> None:
    """A sweep that logs a failed item and goes on, as the app's sweeps do."""
    for item in range(4):
        try:
            time.sleep(0.8)
            ITEMS_SWEPT.append(item)
        except Exception:  # noqa: S112 (the sweeps do this: one item is not the job)
            continue


def job_whose_connection_the_server_drops() -> None:
    """PostgreSQL ends this job's connection between two of its statements, as a restart or
    a failover would; the job itself issues none after that."""
    pid = db.session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
    with db.engine.connect() as other:
        other.execute(sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})


def job_that_reads() -> int:
    return db.session.execute(sa.text("SELECT 1")).scalar_one()


def test_logout_records_are_pruned_by_a_worker_after_expiry(app, client, owner, redis):
    token = login(client, owner)
    client.post("/v1/auth/logout", headers=bearer(token))
    with app.app_context():
        db.session.add(RevokedToken(jti="expired-one", expires_at=utcnow() - timedelta(seconds=1)))
        db.session.commit()
        queue = get_queue("default")
        job = queue.enqueue(maintenance.prune_revoked_tokens)
        SimpleWorker([queue], connection=redis).work(burst=True)
        job.refresh()
        assert job.get_status() == "finished"
        assert job.return_value() == 1
        assert db.session.scalars(sa.select(RevokedToken.jti)).all() != ["expired-one"]
        assert db.session.scalar(sa.select(sa.func.count()).select_from(RevokedToken)) == 1
    assert client.get("/v1/api-keys", headers=bearer(token)).status_code == 401


def test_cron_schedule_declares_the_periodic_jobs(redis):
    scheduler = CronScheduler(connection=redis)
    scheduler.load_config_from_file("app.cron")
    registered = {(job.func_name, job.queue_name, job.interval) for job in scheduler.get_jobs()}
    assert registered == {
        ("app.jobs.maintenance.prune_idempotency_keys", "default", 3600),
        ("app.jobs.maintenance.prune_revoked_tokens", "default", 3600),
        ("app.jobs.charges.expire_charges", "money", 10),
        ("app.jobs.wallets.release_settlements", "money", 60),
        ("app.jobs.payouts.sweep_payouts", "money", 30),
        ("app.jobs.webhooks.sweep_webhooks", "webhooks", 15),
        ("app.jobs.payments.sweep_payments", "money", 10),
        ("app.jobs.payments.fold_payment_totals", "default", 60),
        ("app.jobs.refunds.poll_refunds", "money", 30),
        ("app.jobs.disputes.sweep_dispute_notices", "default", 60),
    }


def test_a_job_that_swallows_exceptions_still_stops_at_its_time_limit(app, redis):
    """Without a forked horse to kill, the time limit is an exception: `except Exception` in
    a sweep must not catch it, or the job would run on past its limit."""
    ITEMS_SWEPT.clear()
    with app.app_context():
        queue = get_queue("default")
        job = queue.enqueue(sweep_that_outlives_its_limit, job_timeout=1)
        AppWorker([queue], connection=redis).work(burst=True)
        job.refresh()
        assert job.get_status() == "failed"
        assert "time limit" in job.latest_result().exc_string
    assert ITEMS_SWEPT == [0]


@pytest.mark.postgres  # a SQLite file has no server that could drop connections
def test_a_worker_whose_connection_dropped_during_a_job_takes_the_next_job(app, redis):
    """The dropped connection's rollback fails when the job's session ends; the worker ends
    it again with a new connection and goes on, instead of quitting with the queue full."""
    with app.app_context():
        queue = get_queue("default")
        dropped = queue.enqueue(job_whose_connection_the_server_drops)
        next_job = queue.enqueue(job_that_reads)
        AppWorker([queue], connection=redis).work(burst=True)
        dropped.refresh()
        next_job.refresh()
        assert dropped.get_status() == "finished"
        assert next_job.get_status() == "finished"
        assert next_job.return_value() == 1
