"""Real processes for the fault tests: a Redis server that can be stopped and started again on
its port, and `python worker.py` workers that can be killed mid-job. Each runs in its own
process group (the worker forks a work horse per job), so a kill or a teardown reaches all."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from redis import Redis
from redis.exceptions import RedisError

ROOT = Path(__file__).resolve().parents[2]
REDIS_SERVER = "/usr/bin/redis-server"
NO_PERSISTENCE = ("--save", "", "--appendonly", "no")
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process, its group and every descendant, and reap it. RQ's work horse
    starts a session of its own, so the group alone would leave it running."""
    descendants = _descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in descendants:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait(timeout=10)


def _descendants(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                children.append(int(stat.parent.name))
    return [p for child in children for p in (child, *_descendants(child))]


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
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        APP_ENV="testing",
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        WEBHOOK_ALLOW_PRIVATE_TEST_URLS="1",  # the receivers run on localhost
        **settings,
    )
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
