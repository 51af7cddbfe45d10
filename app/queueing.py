"""Enqueue jobs only after the work they act on is committed (never inside a transaction).

A service calls `enqueue_after_commit`; the job is handed to RQ when the session commits and
forgotten when it rolls back. If Redis is down at that moment the enqueue is logged and
skipped: the periodic sweeps find the rows by their state and run them later, so nothing is
lost, only delayed.
"""

import logging

from redis.exceptions import RedisError
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.extensions import get_queue

log = logging.getLogger(__name__)
PENDING_JOBS = "acme_jobs_after_commit"


def enqueue_after_commit(
    session: Session, queue_name: str, func: str, *args, job_timeout: int | None = None
) -> None:
    """Ask for `func(*args)` once the session commits (RQ's default time limit unless
    `job_timeout`); the same request twice runs once."""
    pending = session.info.setdefault(PENDING_JOBS, [])
    if (queue_name, func, args, job_timeout) not in pending:
        pending.append((queue_name, func, args, job_timeout))


@event.listens_for(Session, "after_commit")
def _enqueue_pending(session: Session) -> None:
    for queue_name, func, args, job_timeout in session.info.pop(PENDING_JOBS, []):
        try:
            get_queue(queue_name).enqueue(func, *args, job_timeout=job_timeout)
        except RedisError:
            log.warning("enqueue failed; the sweep will pick it up", extra={"job": func})


@event.listens_for(Session, "after_rollback")
def _forget_pending(session: Session) -> None:
    session.info.pop(PENDING_JOBS, None)
