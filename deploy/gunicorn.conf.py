"""gunicorn settings of the web process: `gunicorn wsgi:app --config deploy/gunicorn.conf.py`.

Each gunicorn worker is its own process, so /metrics must add up every worker's request
counts: prometheus_client's multiprocess mode has each worker write its series to files in
PROMETHEUS_MULTIPROC_DIR, and /metrics sums them. The directory is set here, before any
worker imports prometheus_client (which picks files or memory when first imported), and
emptied when gunicorn starts (files of a previous run would be added to this one's). Without
the variable, a temporary directory is made for this run and removed when gunicorn exits.
Bind address and worker count stay on the command line (Procfile, systemd unit).

Workers are gthread with their own changes (app/web_worker.py): a request's body arrives
in the worker's event loop before a thread serves it, so slow clients cost a socket, not a
thread; gunicorn's own refusals answer the JSON error envelope. 8 threads a worker: the
requests wait on PostgreSQL, Redis and the PSP far more than they compute, so threads add
concurrency that processes (about 2 per core: WEB_CONCURRENCY) cannot on a 2-core machine
without the memory of more processes; each thread may hold a database connection, and the
pool keeps 10 (app/config.py engine_options). nginx in front (deploy/nginx/) buffers
bodies and answers over-long requests itself; the limits here are the same or larger, so
they only matter without it.
"""

import os
import shutil
import tempfile
from pathlib import Path

worker_class = "app.web_worker.WebWorker"
threads = 8
# Not a request deadline under gthread (the event loop reports in while threads work): how
# long a worker whose event loop is stuck lives before the master replaces it.
timeout = 30
graceful_timeout = 30  # a stopping worker's requests finish (systemd's TimeoutStopSec is 40)
keepalive = 5  # idle kept-alive connections wait in the event loop, not in a thread
limit_request_line = 8190  # gunicorn's largest; nginx's buffers are 8k (deploy/nginx)
limit_request_fields = 100
limit_request_field_size = 8190

directory_is_ours = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
metrics_directory = Path(
    os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="acme-metrics-")
)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_directory)


def on_starting(server) -> None:
    metrics_directory.mkdir(parents=True, exist_ok=True)
    for stale in metrics_directory.glob("*.db"):
        stale.unlink()


def child_exit(server, worker) -> None:
    """A dead worker's counters stay (its requests happened); only its live gauges go."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, str(metrics_directory))


def on_exit(server) -> None:
    if directory_is_ours:
        shutil.rmtree(metrics_directory, ignore_errors=True)
