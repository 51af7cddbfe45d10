"""RQ worker entry point: `python worker.py` (as many processes as needed, on any machine).

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
"""

from redis import Redis
from rq import Queue, SimpleWorker
from rq.timeouts import UnixSignalDeathPenalty

from app import create_app
from app.extensions import QUEUE_NAMES, db
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
            db.session.remove()


def main() -> None:
    app = create_app()
    with app.app_context():
        connection = Redis.from_url(app.config["REDIS_URL"])
        queues = [Queue(name, connection=connection) for name in QUEUE_NAMES]
        AppWorker(queues, connection=connection).work()


if __name__ == "__main__":
    main()
