"""Job run time, queue wait and outcome per job function, kept in Redis.

Workers run on any machine, several to a machine, so no process can keep these counters
itself: every worker adds its job to the same Redis hashes and
any web process exposes them at scrape time (`app.monitoring.state`). Recording never fails
a job: if Redis does not answer, the observation is lost and a warning logged.
"""

import logging
from collections import defaultdict
from datetime import datetime
from typing import Literal

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString
from redis import Redis
from rq.job import Job

log = logging.getLogger(__name__)

JobOutcome = Literal["finished", "failed"]
# Seconds: a sweep takes milliseconds, a webhook delivery up to WEBHOOK_TIMEOUT_SECONDS.
JOB_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
INFINITY = "+Inf"
RUN_SECONDS_KEY = "acme_metrics_job_run_seconds"
WAIT_SECONDS_KEY = "acme_metrics_job_queue_wait_seconds"
OUTCOMES_KEY = "acme_metrics_job_outcomes"
FIELD_SEPARATOR = "|"  # between a job function's dotted name and a bucket or outcome
SUM_FIELD = "sum"


def record_job(redis: Redis, job: Job, outcome: JobOutcome) -> None:
    """Count one run of `job`, its run time and how long it waited in its queue."""
    try:
        function = job.func_name
        pipeline = redis.pipeline(transaction=False)
        pipeline.hincrby(OUTCOMES_KEY, _field(function, outcome), 1)
        _observe(pipeline, RUN_SECONDS_KEY, function, job.started_at, job.ended_at)
        _observe(pipeline, WAIT_SECONDS_KEY, function, job.enqueued_at, job.started_at)
        pipeline.execute()
    except Exception:
        log.warning("job metrics not recorded", exc_info=True, extra={"job_id": job.id})


def job_families(redis: Redis) -> list:
    """The job series as Prometheus metric families, read from Redis in one round trip."""
    pipeline = redis.pipeline(transaction=False)
    for key in (OUTCOMES_KEY, RUN_SECONDS_KEY, WAIT_SECONDS_KEY):
        pipeline.hgetall(key)
    outcomes, run_seconds, wait_seconds = pipeline.execute()
    runs = CounterMetricFamily(
        "acme_job_runs",
        "Job runs by job function and outcome (finished or failed), every worker included.",
        labels=["function", "outcome"],
    )
    for field, count in sorted(outcomes.items()):
        runs.add_metric(_split(field), int(count))
    return [
        runs,
        _histogram(
            "acme_job_duration_seconds",
            "Job run time by job function, every worker included.",
            run_seconds,
        ),
        _histogram(
            "acme_job_queue_wait_seconds",
            "Time from enqueue to start by job function, every worker included.",
            wait_seconds,
        ),
    ]


def _observe(pipeline, key: str, function: str, start: datetime | None, end: datetime | None):
    if start is None or end is None:
        return
    seconds = max((end - start).total_seconds(), 0.0)
    bucket = next((floatToGoString(le) for le in JOB_BUCKETS if seconds <= le), INFINITY)
    pipeline.hincrby(key, _field(function, bucket), 1)
    pipeline.hincrbyfloat(key, _field(function, SUM_FIELD), seconds)


def _histogram(name: str, documentation: str, fields: dict) -> HistogramMetricFamily:
    """Cumulative buckets from the per-bucket counts stored by `_observe`."""
    family = HistogramMetricFamily(name, documentation, labels=["function"])
    counts: dict[str, dict[str, float]] = defaultdict(dict)
    for field, value in fields.items():
        function, bucket = _split(field)
        counts[function][bucket] = float(value)
    for function, by_bucket in sorted(counts.items()):
        cumulative, buckets = 0.0, []
        for le in (*map(floatToGoString, JOB_BUCKETS), INFINITY):
            cumulative += by_bucket.get(le, 0.0)
            buckets.append((le, cumulative))
        family.add_metric([function], buckets, by_bucket.get(SUM_FIELD, 0.0))
    return family


def _field(function: str, suffix: str) -> str:
    return f"{function}{FIELD_SEPARATOR}{suffix}"


def _split(field: bytes) -> list[str]:
    function, _, suffix = field.decode().rpartition(FIELD_SEPARATOR)
    return [function, suffix]
