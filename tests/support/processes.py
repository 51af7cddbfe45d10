"""Helpers for tests that run real processes (a web server, workers, Redis): free ports,
polling until something is ready, and teardown that leaves nothing running. Each process is
started in its own session (`start_new_session=True`), so its group holds what it started."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import requests

from app.config import PROJECT_ROOT

T = TypeVar("T")


def procfile() -> dict[str, str]:
    """The Procfile's commands by process type, as written (one parser for every test that
    runs or checks them)."""
    lines = PROJECT_ROOT.joinpath("Procfile").read_text().splitlines()
    entries = (line.partition(":") for line in lines if line.strip())
    return {name.strip(): command.strip() for name, _, command in entries}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], T], timeout: float, what: str) -> T:
    """The predicate's first truthy result; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def answers_ok(url: str, timeout: float = 2) -> bool:
    """Whether a GET of `url` answers 200; False while the server is not listening yet, or
    still booting (a read timeout)."""
    try:
        return requests.get(url, timeout=timeout).status_code == 200
    except requests.RequestException:
        return False


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process, its group and every descendant (one may have started a session
    of its own, out of the group), and reap it."""
    descendants = _descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in descendants:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait(timeout=10)


def wait_or_kill(process: subprocess.Popen, timeout: float) -> None:
    """After asking a process to stop: give it `timeout` seconds, then `kill_group` whatever
    is left (the process itself if it ignored the signal, or children it left behind)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    kill_group(process)


def _descendants(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                children.append(int(stat.parent.name))
    return [p for child in children for p in (child, *_descendants(child))]
