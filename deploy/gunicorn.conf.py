"""gunicorn settings of the web process: `gunicorn wsgi:app --config deploy/gunicorn.conf.py`.

Each gunicorn worker is its own process, so /metrics must add up every worker's request
counts: prometheus_client's multiprocess mode has each worker write its series to files in
PROMETHEUS_MULTIPROC_DIR, and /metrics sums them. The directory is set here, before any
worker imports prometheus_client (which picks files or memory when first imported), and
emptied when gunicorn starts (files of a previous run would be added to this one's). Without
the variable, a temporary directory is made for this run and removed when gunicorn exits.
Bind address and worker count stay on the command line (Procfile, systemd unit).
"""

import os
import shutil
import tempfile
from pathlib import Path

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
