"""RQ worker entry point: `python worker.py [money|webhooks] [--processes N]`.

A role is the queues its processes take, so money jobs never wait behind a merchant's slow
webhook endpoint: `money` (payment finalisation, refunds, payouts, releases, expiry, then the
`default` housekeeping queue) and `webhooks` (relay, deliveries, their sweep); no role takes
every queue (tests, a one-process development setup). `--processes N` runs N workers under
RQ's WorkerPool: it forks them, passes SIGINT/SIGTERM on for a warm shutdown, replaces one that
died and exits once all have stopped.

The app context is pushed once, and each job runs in this process (RQ's SimpleWorker, no
fork): the database connection pool, SQLAlchemy's compiled statements and the imports stay
warm from one job to the next, which makes a webhook delivery about 9x cheaper than in a
forked work horse (docs/performance.md). The session is removed after every job, so no state
leaks into the next. Job timeouts hold (SIGALRM in this, the main, thread) and cannot be
swallowed by a job (`JobTimedOut`); a job that kills the interpreter takes the worker with
it, and the supervisor restarts it (RQ then moves the job to the failed registry as
abandoned). Every job's outcome, run time and queue wait are recorded in Redis for /metrics
(`app/monitoring/jobs.py`). RQ gets a Redis client of its own: it lengthens its command
timeout for the blocking pops, while jobs keep the app's fail-fast client.

What `create_app` loaded is frozen out of the garbage collector's sight, as in the web
process (wsgi.py): a full collection would otherwise scan it all, about 100 ms with the
delivery engine's senders stopped.
"""

import argparse
import gc

from redis import Redis
from rq import Queue, SimpleWorker
from rq.timeouts import UnixSignalDeathPenalty
from rq.worker_pool import WorkerPool
from sqlalchemy.exc import DBAPIError

from app import create_app
from app.extensions import DEFAULT_QUEUE, MONEY_QUEUE, QUEUE_NAMES, WEBHOOK_QUEUE, db
from app.monitoring.jobs import record_job


class JobTimedOut(BaseException):
    """A job past its time limit. Not an Exception, so a job that carries on after one failed
    item (`except Exception` in the sweeps) still stops; RQ records the job failed."""


class JobDeathPenalty(UnixSignalDeathPenalty):
    """RQ's SIGALRM time limit, raising `JobTimedOut`. In a forked horse the worker would kill
    a horse that overran; with no fork, the exception is the only stop."""

    def handle_death_penalty(self, signum, frame):
        raise JobTimedOut(f"The job ran past its time limit ({self._timeout} s).")


class JobMetrics:
    """Worker mixin: each job's outcome, run time and queue wait, recorded for /metrics."""

    def handle_job_success(self, job, queue, **kwargs):
        super().handle_job_success(job, queue, **kwargs)
        record_job(self.connection, job, "finished")

    def handle_job_failure(self, job, queue, **kwargs):
        super().handle_job_failure(job, queue, **kwargs)
        record_job(self.connection, job, "failed")


class AppWorker(JobMetrics, SimpleWorker):
    death_penalty_class = JobDeathPenalty

    def perform_job(self, job, queue, *args, **kwargs):
        try:
            return super().perform_job(job, queue, *args, **kwargs)
        finally:
            _end_session()


def _end_session() -> None:
    """Give the job's connection back to the pool. If the server dropped it during the job (a
    restart, a failover), its rollback fails and the pool discards it: the session is ended
    again, now without it, and the worker takes its next job instead of quitting."""
    try:
        db.session.remove()
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        db.session.remove()


class PooledAppWorker(AppWorker):
    """One of a WorkerPool's workers: its app, and so its database connections, are made in
    its own process, after the fork."""

    def work(self, *args, **kwargs) -> bool:
        with create_app().app_context():
            gc.freeze()
            return super().work(*args, **kwargs)


QUEUES_OF_ROLE = {
    "money": (MONEY_QUEUE, DEFAULT_QUEUE),
    "webhooks": (WEBHOOK_QUEUE,),
    "all": QUEUE_NAMES,
}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Acme Pay RQ worker")
    parser.add_argument("role", nargs="?", default="all", choices=QUEUES_OF_ROLE)
    parser.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    arguments = parser.parse_args(argv)
    if arguments.processes < 1:
        parser.error("--processes must be at least 1")
    return arguments


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    queue_names = QUEUES_OF_ROLE[arguments.role]
    app = create_app()
    gc.freeze()
    connection = Redis.from_url(app.config["REDIS_URL"])
    if arguments.processes > 1:
        pool = WorkerPool(
            queue_names, connection, num_workers=arguments.processes, worker_class=PooledAppWorker
        )
        pool.start()
        return
    with app.app_context():
        queues = [Queue(name, connection=connection) for name in queue_names]
        AppWorker(queues, connection=connection).work()


if __name__ == "__main__":
    main()
