"""Jobs run by a real RQ worker, and the periodic schedule `rq cron` loads."""

import time
from datetime import timedelta

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
