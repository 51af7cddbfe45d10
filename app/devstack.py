"""Runs the whole service on one machine: migrations, demo seed, and the Procfile's processes
(web, the money and webhook workers, `rq cron`), plus a webhook receiver that prints what it
is sent (`app.dev_receiver`).

`python -m app.devstack` is what the README's run command starts. With DATABASE_URL and
REDIS_URL unset it uses SQLite under instance/ and an embedded Redis-compatible server; with
them set it uses PostgreSQL and Redis. Stop it with Ctrl-C: every child stops with it.

The console is for a person: the banner with the logins, the receiver's deliveries, and each
process's warnings and errors. Everything the Procfile's processes write, the INFO record of
every periodic job and every request included, goes to `<INSTANCE_PATH>/logs/<process>.log`
(afresh on each run); on the console those records would push the banner away within seconds.
"""

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from flask_migrate import upgrade

from app import create_app
from app.config import PROJECT_ROOT, instance_path, load_env_file
from app.embedded_redis import EmbeddedRedis
from app.extensions import db
from app.services import demo

LOG_DIRECTORY = "logs"
CONSOLE_CHILDREN = frozenset({"receiver"})  # what it prints is the point of running it
ROUTINE_LEVELS = frozenset({"DEBUG", "INFO"})
_GUNICORN_RECORD = re.compile(r"\[[^\]]*\] \[\d+\] \[([A-Z]+)\] ")  # [time] [pid] [LEVEL] …
_RQ_PLAIN_RECORD = re.compile(r"\d\d:\d\d:\d\d ")  # `rq cron`'s `HH:MM:SS message`


def local_secret() -> str:
    """A random secret kept in instance/, so local sessions survive restarts and stay private."""
    path = instance_path() / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def prepare_database() -> demo.DemoSeed:
    """Apply migrations and seed the demo merchant; returns what to print."""
    app = create_app()
    with app.app_context():
        upgrade()
        seeded = demo.seed()
        db.session.commit()
    return seeded


def child_commands(port: int, receiver_port: int) -> dict[str, list[str]]:
    """The Procfile's processes (web on loopback; `release` is `prepare_database`), and the
    receiver; tests/ops/test_deploy.py checks they stay the same."""
    bin_dir = os.path.dirname(sys.executable)
    return {
        "web": [
            os.path.join(bin_dir, "gunicorn"),
            "wsgi:app",
            "--config",
            "deploy/gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            os.environ.get("WEB_CONCURRENCY", "2"),
        ],
        "worker": [sys.executable, "worker.py", "money"],
        "webhooks": [
            sys.executable,
            "worker.py",
            "webhooks",
            "--processes",
            os.environ.get("WEBHOOK_PROCESSES", "4"),
        ],
        "cron": [os.path.join(bin_dir, "rq"), "cron", "app.cron"],  # REDIS_URL: environment
        "receiver": [sys.executable, "-m", "app.dev_receiver", "--port", str(receiver_port)],
    }


def is_routine(line: str, stream: str) -> bool:
    """Whether a child's output line is a DEBUG or INFO record, for its log file only: a JSON
    record (app/logs.py), gunicorn's `[INFO]` lines, or rq's plain lines on stdout (rq writes
    its errors to stderr). Anything else, a traceback included, is shown on the console too."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return False
        return isinstance(record, dict) and record.get("level") in ROUTINE_LEVELS
    gunicorn = _GUNICORN_RECORD.match(line)
    if gunicorn:
        return gunicorn[1] in ROUTINE_LEVELS
    return stream == "stdout" and _RQ_PLAIN_RECORD.match(line) is not None


class ChildLog:
    """A child's stdout and stderr: every line into its log file, and the lines that are not
    routine also onto the console as `[name] …`."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []

    def follow(self, child: subprocess.Popen) -> None:
        for stream_name, stream in (("stdout", child.stdout), ("stderr", child.stderr)):
            reader = threading.Thread(target=self._relay, args=(stream, stream_name), daemon=True)
            reader.start()
            self._readers.append(reader)

    def close(self, timeout: float = 5) -> None:
        """Once the child has stopped: what it wrote last, then the file (a grandchild that
        still holds the pipe is not waited for)."""
        for reader in self._readers:
            reader.join(timeout)
        with self._lock:
            self._file.close()

    def _relay(self, stream: IO[str], stream_name: str) -> None:
        for line in stream:
            with self._lock:
                if self._file.closed:
                    return
                self._file.write(line)
                self._file.flush()
            if not is_routine(line, stream_name):
                print(f"[{self.name}] {line.rstrip()}", flush=True)


def start_children(
    commands: dict[str, list[str]], log_directory: Path
) -> tuple[dict[str, subprocess.Popen], list[ChildLog]]:
    """Each command as a child; all but the receiver's output goes through a `ChildLog`
    (unbuffered, so the log files keep up with the processes)."""
    log_directory.mkdir(parents=True, exist_ok=True)
    piped = {
        "env": {**os.environ, "PYTHONUNBUFFERED": "1"},
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "text": True,
        "encoding": "utf-8",
        "errors": "replace",
    }
    children, logs = {}, []
    for name, command in commands.items():
        output = {} if name in CONSOLE_CHILDREN else piped
        # S603: our own executables, from `child_commands`.
        children[name] = subprocess.Popen(command, cwd=PROJECT_ROOT, **output)  # noqa: S603
        if output:
            log = ChildLog(name, log_directory / f"{name}.log")
            log.follow(children[name])
            logs.append(log)
    return children, logs


def supervise(children: dict[str, subprocess.Popen]) -> int:
    """Wait until a child exits or we are told to stop; then stop them all."""
    stopping = False

    def request_stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    exit_code = 0
    while not stopping:
        for name, child in children.items():
            if child.poll() is not None:
                print(f"[devstack] {name} exited with {child.returncode}; stopping", flush=True)
                exit_code, stopping = child.returncode or 1, True
        time.sleep(0.5)
    for child in children.values():
        if child.poll() is None:
            child.terminate()
    for child in children.values():
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
    return exit_code


def main() -> int:
    load_env_file()
    os.environ.setdefault("APP_ENV", "development")
    # A paid test charge becomes available for a payout within minutes, not the next business
    # day, so the whole flow can be tried in one sitting.
    os.environ.setdefault("SETTLEMENT_HOLD", "60s")
    if not os.environ.get("SECRET_KEY"):
        os.environ["SECRET_KEY"] = local_secret()
    port = int(os.environ.get("PORT", "5000"))
    receiver_port = int(os.environ.get("DEV_RECEIVER_PORT", str(port + 1)))
    os.environ.setdefault("PUBLIC_BASE_URL", f"http://127.0.0.1:{port}")
    embedded = None
    if not os.environ.get("REDIS_URL"):
        embedded = EmbeddedRedis(port=int(os.environ.get("EMBEDDED_REDIS_PORT", "0"))).start()
        os.environ["REDIS_URL"] = embedded.url
    seeded = prepare_database()
    log_directory = instance_path() / LOG_DIRECTORY
    children, logs = start_children(child_commands(port, receiver_port), log_directory)
    print(
        "\n".join(
            [
                "",
                "Acme Pay is running (web, worker, webhooks, cron). Ctrl-C stops everything.",
                *seeded.summary_lines(),
                f"  API docs:     {os.environ['PUBLIC_BASE_URL']}/v1/docs",
                f"  Webhook receiver for trying endpoints: http://127.0.0.1:{receiver_port}/hooks"
                " (prints each delivery here)",
                f"  Redis:        {os.environ['REDIS_URL']}" + (" (embedded)" if embedded else ""),
                f"  Logs:         {log_directory}/<process>.log (web, worker, webhooks, cron);"
                " warnings and errors show here too",
                "",
            ]
        ),
        flush=True,
    )
    code = supervise(children)
    for log in logs:
        log.close()
    if embedded:
        embedded.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
