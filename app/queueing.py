"""Enqueue jobs only after the work they act on is committed (never inside a transaction).

A service calls `enqueue_after_commit`; the job is handed to RQ when the session commits and
forgotten when it rolls back. If Redis is down at that moment the enqueue is logged and
skipped: the periodic sweeps find the rows by their state and run them later, so nothing is
lost, only delayed.

A job that catches up on everything outstanding (the webhook relay) is asked for with
`enqueue_once_after_commit`: a burst of commits then queues one run, not one per commit.
"""

import logging

from redis.exceptions import RedisError
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.extensions import get_queue, get_redis

log = logging.getLogger(__name__)
PENDING_JOBS = "acme_jobs_after_commit"
# How long a queued catch-up run stands for the commits after it, if it never starts (its
# enqueue failed, or the worker died): then the next commit queues another.
QUEUED_RUN_STANDS_SECONDS = 10


def enqueue_after_commit(
    session: Session, queue_name: str, func: str, *args, job_timeout: int | None = None
) -> None:
    """Ask for `func(*args)` once the session commits (RQ's default time limit unless
    `job_timeout`); the same request twice runs once."""
    _ask(session, (queue_name, func, args, job_timeout, False))


def enqueue_once_after_commit(session: Session, queue_name: str, func: str) -> None:
    """Ask for a run of `func()` once the session commits, unless a run queued earlier has
    not started yet: that run will see this commit's work. The job calls `run_started`
    before it reads anything, so a commit after that queues a run of its own."""
    _ask(session, (queue_name, func, (), None, True))


def commit(session: Session) -> None:
    """Commit the session's work: its open transaction, and the jobs asked for since the last
    commit (the answer of a charge written outside the session, `services.new_rows`, asks
    for the relay with no transaction open). A session holding neither is left as it is: its
    commit would be bookkeeping alone, about 4 % of a charge read's CPU."""
    if session.in_transaction() or session.info.get(PENDING_JOBS):
        session.commit()


def run_started(func: str) -> None:
    """Called first by a job asked for with `enqueue_once_after_commit`: the commits from now
    on are not covered by this run and queue the next one."""
    try:
        get_redis().delete(queued_run_key(func))
    except RedisError:
        log.warning("a queued run's mark was not cleared; it expires", extra={"job": func})


def _ask(session: Session, job: tuple) -> None:
    pending = session.info.setdefault(PENDING_JOBS, [])
    if job not in pending:
        pending.append(job)


def queued_run_key(func: str) -> str:
    """The Redis mark of a queued run of `func` that has not started yet."""
    return f"acme:queued-run:{func}"


@event.listens_for(Session, "after_commit")
def _enqueue_pending(session: Session) -> None:
    for queue_name, func, args, job_timeout, once in session.info.pop(PENDING_JOBS, []):
        try:
            if once and not get_redis().set(
                queued_run_key(func), 1, nx=True, ex=QUEUED_RUN_STANDS_SECONDS
            ):
                continue
            get_queue(queue_name).enqueue(func, *args, job_timeout=job_timeout)
        except RedisError:
            log.warning("enqueue failed; the sweep will pick it up", extra={"job": func})


@event.listens_for(Session, "after_rollback")
def _forget_pending(session: Session) -> None:
    session.info.pop(PENDING_JOBS, None)
