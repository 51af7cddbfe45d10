"""Real processes for the fault tests: a Redis server that can be stopped and started again on
its port, and `python worker.py` workers (alone, or as the Procfile runs them) that can be
killed mid-job (tests/deployed starts the Procfile's processes with them too). Each runs in
its own process group, so a kill or a teardown reaches all it started."""

import os
import subprocess
import sys
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError

from tests.support.processes import free_port, kill_group, wait_for

ROOT = Path(__file__).resolve().parents[2]
REDIS_SERVER = "/usr/bin/redis-server"
NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


class RedisServer:
    """A `redis-server` that keeps nothing on disk: after `stop` and `start` it is back on the
    same port and empty, like a Redis that was restarted or replaced."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", *NO_PERSISTENCE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self._answers, 10, "redis-server to start")
        return self

    def stop(self) -> None:
        if self.process is not None:
            kill_group(self.process)
            self.process = None

    def _answers(self) -> bool:
        try:
            return bool(Redis.from_url(self.url, socket_connect_timeout=0.2).ping())
        except RedisError:
            return False


def start_worker(
    database_url: str, redis_url: str, log_path: Path, module: str = "worker", **settings: str
) -> subprocess.Popen:
    """`python worker.py` (or a module that wraps it) on the test database and `redis_url`;
    `settings` are extra environment variables (WEBHOOK_TIMEOUT_SECONDS=…)."""
    return _start([sys.executable, "-m", module], database_url, redis_url, log_path, settings)


def start_procfile_command(
    command: str, database_url: str, redis_url: str, log_path: Path, **settings: str
) -> subprocess.Popen:
    """A Procfile command, run by a shell as honcho would (its `python` is this one's)."""
    argv = ["/bin/sh", "-c", f"exec {command}"]
    return _start(argv, database_url, redis_url, log_path, settings)


def process_environment(database_url: str, redis_url: str, **settings: str) -> dict[str, str]:
    """This process's environment for a service process on `database_url` and `redis_url`,
    in test mode, with `settings` on top."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        APP_ENV="testing",
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        WEBHOOK_ALLOW_PRIVATE_TEST_URLS="1",  # the receivers run on localhost
        **settings,
    )
    return env


def _start(
    argv: list[str], database_url: str, redis_url: str, log_path: Path, settings: dict[str, str]
) -> subprocess.Popen:
    with log_path.open("ab") as log:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=process_environment(database_url, redis_url, **settings),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
