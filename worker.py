"""RQ worker entry point: `python worker.py` (as many processes as needed, on any machine).

The app context is pushed once, and each job runs in this process (RQ's SimpleWorker, no
fork): the database connection pool, SQLAlchemy's compiled statements and the imports stay
warm from one job to the next, which makes a webhook delivery about 5x cheaper than in a
forked work horse (docs/performance.md). The session is removed after every job, so no state
leaks into the next. Job timeouts still hold (SIGALRM in this, the main, thread); a job that
kills the interpreter takes the worker with it, and the supervisor restarts it (RQ then
moves the job to the failed registry as abandoned). Every job's outcome, run time and queue
wait are recorded in Redis for /metrics (`app/monitoring/jobs.py`).
"""

from rq import SimpleWorker

from app import create_app
from app.extensions import QUEUE_NAMES, db, get_queue, get_redis
from app.monitoring.jobs import record_job


class JobMetrics:
    """Worker mixin: each job's outcome, run time and queue wait, recorded for /metrics."""

    def handle_job_success(self, job, queue, **kwargs):
        super().handle_job_success(job, queue, **kwargs)
        record_job(self.connection, job, "finished")

    def handle_job_failure(self, job, queue, **kwargs):
        super().handle_job_failure(job, queue, **kwargs)
        record_job(self.connection, job, "failed")


class AppWorker(JobMetrics, SimpleWorker):
    def perform_job(self, job, queue, *args, **kwargs):
        try:
            return super().perform_job(job, queue, *args, **kwargs)
        finally:
            db.session.remove()


def main() -> None:
    app = create_app()
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]
        AppWorker(queues, connection=get_redis()).work(with_scheduler=True)


if __name__ == "__main__":
    main()
