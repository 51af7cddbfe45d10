"""Runs the whole service on one machine: migrations, demo seed, and the Procfile's processes
(web, the money and webhook workers, `rq cron`), plus a webhook receiver that prints what it
is sent (`app.dev_receiver`).

`python -m app.devstack` is what the README's run command starts. With DATABASE_URL and
REDIS_URL unset it uses SQLite under instance/ and an embedded Redis-compatible server; with
them set it uses PostgreSQL and Redis. Stop it with Ctrl-C: every child stops with it.
"""

import os
import secrets
import signal
import subprocess
import sys
import time

from flask_migrate import upgrade

from app import create_app
from app.config import PROJECT_ROOT, instance_path, load_env_file
from app.embedded_redis import EmbeddedRedis
from app.extensions import db
from app.services import demo


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
    children = {
        name: subprocess.Popen(command, cwd=PROJECT_ROOT)  # noqa: S603 (our own executables)
        for name, command in child_commands(port, receiver_port).items()
    }
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
                "",
            ]
        ),
        flush=True,
    )
    code = supervise(children)
    if embedded:
        embedded.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
