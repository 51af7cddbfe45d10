"""Helpers shared by the benchmarks in bench/: a throwaway database, the benchmark's Redis DB,
the app's environment, the operator CLI, child processes, the commit, and the exit status.

Imported by the scripts as `common` (they run from bench/, never as a package).
"""

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN = REPO_ROOT / ".venv" / "bin"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
STOP_TIMEOUT_SECONDS = 15


class BenchmarkError(Exception):
    """The benchmark could not run or measured errors; the message says why."""


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer not below `minimum`."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below {minimum}")
        return value

    return parse


def admin_url_from_env() -> str:
    """The PostgreSQL server where the throwaway database is created and dropped."""
    return os.environ.get("BENCH_DATABASE_ADMIN_URL", DEFAULT_ADMIN_URL)


def redis_url_from_env() -> str:
    """The benchmark's Redis DB (flushed)."""
    return os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)


def redacted(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def with_database(admin_url: str, name: str) -> str:
    return urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))


@contextmanager
def throwaway_database(admin_url: str) -> Iterator[str]:
    """A fresh database for this run, dropped afterwards; yields its URL."""
    name = f"acme_bench_{int(time.time())}_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def flushed_redis(url: str) -> Iterator[None]:
    """The benchmark's Redis DB, flushed before the run and again after it (jobs, workers)."""
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield
    finally:
        client.flushdb()
        client.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def base_environment(database_url: str, redis_url: str) -> dict[str, str]:
    """The app's environment for one run: development mode, a random SECRET_KEY (the same for
    every process of the run), the throwaway database and the benchmark's Redis DB."""
    return {
        **os.environ,
        "APP_ENV": "development",
        "SECRET_KEY": secrets.token_hex(32),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
    }


def flask_cli(env: dict[str, str], *args: str) -> str:
    """Run `flask --app wsgi ARGS` in the repo; its stdout, or BenchmarkError with its stderr."""
    done = subprocess.run(  # noqa: S603 (our own executable)
        [str(BIN / "flask"), "--app", "wsgi", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BenchmarkError(f"flask {' '.join(args)} failed:\n{done.stderr.strip()}")
    return done.stdout


def create_test_account(env: dict[str, str]) -> tuple[str, str]:
    """A new account's id and test API key, parsed from the `account_id=…` and
    `test_api_key=…` lines of `accounts create`."""
    output = flask_cli(env, "accounts", "create", "Bench Store", "--test-key")
    values = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    api_key = values.get("test_api_key", "")
    if not api_key.startswith("ak_test_"):
        raise BenchmarkError(f"No test API key in the output of accounts create:\n{output}")
    return values["account_id"], api_key


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (graceful), then SIGKILL to the process's whole group (started with
    `start_new_session=True`)."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def git(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 (fixed git arguments)
        ["git", *args],  # noqa: S607 (git from PATH)
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def git_commit() -> str:
    """The short commit; the app runs the working tree, so say when it differs."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit} (+ uncommitted changes)" if changed else commit


def run(benchmark: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> int:
    """Run a benchmark and turn its outcome into an exit status. SIGTERM unwinds like Ctrl-C,
    so the benchmark's context managers clean up in both cases."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        benchmark(args)
    except BenchmarkError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("benchmark interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0
