"""RQ worker entry point: `python worker.py` (as many processes as needed, on any machine).

The app context is pushed once; each job runs in a forked work horse, which first drops the
database connections it inherited (they belong to the parent and must not be shared). Every
job's outcome, run time and queue wait are recorded in Redis for /metrics
(`app/monitoring/jobs.py`), by the horse or, when the horse died, by the worker.
"""

from rq import Worker

from app import create_app
from app.extensions import QUEUE_NAMES, db, get_queue, get_redis
from app.monitoring.jobs import record_job


class AppWorker(Worker):
    def main_work_horse(self, job, queue):
        db.engine.dispose(close=False)
        return super().main_work_horse(job, queue)

    def handle_job_success(self, job, queue, **kwargs):
        super().handle_job_success(job, queue, **kwargs)
        record_job(self.connection, job, "finished")

    def handle_job_failure(self, job, queue, **kwargs):
        super().handle_job_failure(job, queue, **kwargs)
        record_job(self.connection, job, "failed")


def main() -> None:
    app = create_app()
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]
        AppWorker(queues, connection=get_redis()).work(with_scheduler=True)


if __name__ == "__main__":
    main()
