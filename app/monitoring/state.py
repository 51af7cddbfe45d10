"""Series read at scrape time from the state every process shares (Redis, the database).

Queue depth, job timings, webhook delivery outcomes and the outbox backlog are the same
whichever web process answers the scrape, so none of them needs a process of its own to
count. Each source is read in its own guard: a source that fails is left out and reported
as `acme_metrics_source_up{source=…} 0`, and the rest of the answer is still served.
"""

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

import sqlalchemy as sa
from prometheus_client.core import GaugeMetricFamily, Metric
from redis import Redis
from rq import Queue, Worker
from rq.exceptions import NoSuchJobError
from rq.job import Job
from sqlalchemy.exc import SQLAlchemyError

from app.extensions import QUEUE_NAMES, db, get_redis
from app.models import DeliveryStatus, Event, KeyMode, WebhookDelivery
from app.models.base import utcnow
from app.monitoring.jobs import job_families
from app.services import psp_notices

log = logging.getLogger(__name__)
QUEUE_STATES = ("queued", "started", "scheduled", "deferred", "failed")

Source = Callable[[], Iterable[Metric]]


class GuardedCollector:
    """Collects each named source on its own; one failing never hides the others."""

    def __init__(self, sources: dict[str, Source]):
        self.sources = sources

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(
            "acme_metrics_source_up",
            "1 when this scrape could read the source, 0 when its series are missing.",
            labels=["source"],
        )
        for name, source in self.sources.items():
            try:
                families, available = list(source()), 1
            except Exception:
                log.warning("metrics source unavailable", exc_info=True, extra={"source": name})
                families, available = [], 0
            up.add_metric([name], available)
            yield from families
        yield up


def redis_families() -> list[Metric]:
    """RQ queue depth per queue and state, the oldest waiting job's age, live workers, and
    the job series the workers record."""
    redis = get_redis()
    queues = [Queue(name, connection=redis) for name in QUEUE_NAMES]
    pipeline = redis.pipeline(transaction=False)
    for queue in queues:
        pipeline.llen(queue.key)
        for registry in _registries(queue):
            pipeline.zcard(registry.key)
        pipeline.lindex(queue.key, 0)
    answers = iter(pipeline.execute())
    depth = GaugeMetricFamily(
        "acme_rq_queue_jobs",
        "Jobs per RQ queue and state (queued: waiting for a worker; failed: dead jobs).",
        labels=["queue", "state"],
    )
    oldest = GaugeMetricFamily(
        "acme_rq_queue_oldest_job_age_seconds",
        "How long the job at the head of the queue has waited (0 when empty).",
        labels=["queue"],
    )
    now = utcnow()
    for queue in queues:
        for state in QUEUE_STATES:
            depth.add_metric([queue.name, state], next(answers))
        oldest.add_metric([queue.name], _waited_seconds(redis, next(answers), now))
    workers = GaugeMetricFamily("acme_rq_workers", "RQ workers registered in Redis (alive).")
    workers.add_metric([], Worker.count(connection=redis))
    return [depth, oldest, workers, *job_families(redis)]


def database_families() -> list[Metric]:
    """Webhook deliveries per mode and status, the oldest overdue delivery, the outbox, and
    the live PSP's open notices."""
    try:
        return _database_families(utcnow())
    except SQLAlchemyError:
        db.session.rollback()  # the request's session stays usable after a failed read
        raise


def _database_families(now: datetime) -> list[Metric]:
    counts = dict.fromkeys(((mode, status) for mode in KeyMode for status in DeliveryStatus), 0)
    rows = db.session.execute(
        sa.select(WebhookDelivery.mode, WebhookDelivery.status, sa.func.count()).group_by(
            WebhookDelivery.mode, WebhookDelivery.status
        )
    )
    for mode, status, count in rows:
        counts[(mode, status)] = count
    deliveries = GaugeMetricFamily(
        "acme_webhook_deliveries",
        "Webhook deliveries by mode and status (FAILED: dead letters).",
        labels=["mode", "status"],
    )
    for (mode, status), count in counts.items():
        deliveries.add_metric([mode.value, status.value], count)
    overdue_since = db.session.scalar(
        sa.select(sa.func.min(WebhookDelivery.next_retry_at)).where(
            WebhookDelivery.status == DeliveryStatus.PENDING, WebhookDelivery.next_retry_at <= now
        )
    )
    overdue = GaugeMetricFamily(
        "acme_webhook_delivery_overdue_seconds",
        "How late the most overdue PENDING delivery is (0 when none is due).",
    )
    overdue.add_metric([], _seconds_since(overdue_since, now))
    unrelayed, oldest_event = db.session.execute(
        sa.select(sa.func.count(), sa.func.min(Event.created_at)).where(Event.relayed_at.is_(None))
    ).one()
    backlog = GaugeMetricFamily(
        "acme_outbox_unrelayed_events", "Events not yet turned into webhook deliveries."
    )
    backlog.add_metric([], unrelayed)
    age = GaugeMetricFamily(
        "acme_outbox_oldest_unrelayed_age_seconds",
        "Age of the oldest event not yet relayed (0 when none).",
    )
    age.add_metric([], _seconds_since(oldest_event, now))
    notices = GaugeMetricFamily(
        "acme_psp_notices_open",
        "Unresolved back-office notices about what the live PSP reported, by kind.",
        labels=["kind"],
    )
    for kind, count in psp_notices.open_counts().items():
        notices.add_metric([kind.value], count)
    return [deliveries, overdue, backlog, age, notices]


def _registries(queue: Queue):
    """In QUEUE_STATES order, after `queued`."""
    return (
        queue.started_job_registry,
        queue.scheduled_job_registry,
        queue.deferred_job_registry,
        queue.failed_job_registry,
    )


def _waited_seconds(redis: Redis, head_job_id: bytes | None, now: datetime) -> float:
    if head_job_id is None:
        return 0.0
    try:
        job = Job.fetch(head_job_id.decode(), connection=redis)
    except NoSuchJobError:
        return 0.0
    return _seconds_since(job.enqueued_at, now)


def _seconds_since(moment: datetime | None, now: datetime) -> float:
    return max((now - moment).total_seconds(), 0.0) if moment is not None else 0.0
