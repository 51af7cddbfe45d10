"""RQ worker entry point: `python worker.py` (as many processes as needed, on any machine).

The app context is pushed once; each job runs in a forked work horse, which first drops the
database connections it inherited (they belong to the parent and must not be shared).
"""

from rq import Worker

from app import create_app
from app.extensions import QUEUE_NAMES, db, get_queue, get_redis


class AppWorker(Worker):
    def main_work_horse(self, job, queue):
        db.engine.dispose(close=False)
        return super().main_work_horse(job, queue)


def main() -> None:
    app = create_app()
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]
        AppWorker(queues, connection=get_redis()).work(with_scheduler=True)


if __name__ == "__main__":
    main()
