"""Helpers shared by the benchmarks in bench/: the command line, a throwaway database, the
benchmark's Redis DB, the app's environment, the operator CLI, child processes and their logs,
the commit and the machine, the exit status, the seeded transactions, percentiles, timed GETs,
errors, and the EXPLAIN of captured statements.

Imported by the scripts as `common` (they run from bench/, never as a package).
"""

import argparse
import math
import os
import platform
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
import requests
import sqlalchemy as sa
from sqlalchemy.orm import Session, scoped_session

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN = REPO_ROOT / ".venv" / "bin"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
STOP_TIMEOUT_SECONDS = 15
STARTUP_TIMEOUT_SECONDS = 30
REQUEST_TIMEOUT_SECONDS = 30
LOG_TAIL = 3000  # characters of a child process's log shown when it fails
SHOWN_ERRORS = 5
SEED_SEED = 0.42  # setseed(): the same rows every run
# What the stats read of seeded transactions once their daily totals are rebuilt: analysed
# together, as autovacuum would leave them (a fresh totals table the planner thinks empty is
# walked through its index row by row).
STATS_TABLES = (
    "transactions",
    "payment_day_totals",
    "payment_day_volumes",
    "payment_month_volumes",
    "payment_day_paid_volumes",
    "payment_total_changes",
)

# One row per generated index; every random draw is its own column so the CASEs below read
# each draw once. Created uniformly over the last 400 days. Enum columns hold the members'
# NAMES (PAID, TEST, PAYMENTS). Methods per currency as the sandbox serves them; paid_with is
# one of the offered methods. 1 % of the rows carry `%(payer_document)s` (NULL if None).
SEED_TRANSACTIONS_SQL = """
WITH draws AS (
    SELECT now() - random() * interval '400 days' AS created_at,
           random() AS r_status, random() AS r_currency, random() AS r_methods,
           random() AS r_paid_with, random() AS r_delay, random() AS r_payer,
           (500 + floor(random() * 99500))::bigint AS amount
    FROM generate_series(1, %(rows)s)
), shaped AS (
    SELECT d.*,
           CASE WHEN r_currency < 0.70 THEN 'BRL' WHEN r_currency < 0.85 THEN 'EUR'
                WHEN r_currency < 0.95 THEN 'USD' ELSE 'USDT' END AS currency,
           CASE WHEN r_status < 0.57 THEN 'PAID' WHEN r_status < 0.60 THEN 'REFUNDED'
                WHEN r_status < 0.77 THEN 'EXPIRED' WHEN r_status < 0.84 THEN 'CANCELLED'
                WHEN r_status < 0.89 THEN 'REFUSED'
                WHEN created_at > now() - interval '1 day' THEN 'WAITING_PAYMENT'
                ELSE 'EXPIRED' END AS status
    FROM draws AS d
), offered AS (
    SELECT s.*,
           (CASE currency
                WHEN 'BRL' THEN CASE WHEN r_methods < 0.45 THEN '["PIX"]'
                                     WHEN r_methods < 0.75 THEN '["PIX", "BOLETO"]'
                                     WHEN r_methods < 0.90 THEN '["PIX", "CREDIT_CARD"]'
                                     ELSE '["BOLETO"]' END
                WHEN 'EUR' THEN CASE WHEN r_methods < 0.40 THEN '["MBWAY", "MULTIBANCO"]'
                                     WHEN r_methods < 0.75 THEN '["CREDIT_CARD"]'
                                     ELSE '["MULTIBANCO"]' END
                WHEN 'USD' THEN '["CREDIT_CARD"]'
                ELSE '["CRYPTO"]' END)::jsonb AS methods,
           status IN ('PAID', 'REFUNDED') AS paid
    FROM shaped AS s
)
INSERT INTO transactions (
    id, account_id, mode, origin, status, amount, currency, payment_methods, paid_with,
    payer_document, metadata, expires_in, expires_at, provider, finalised_at, provider_fee,
    platform_fee, paid_at, created_at, updated_at
)
SELECT gen_random_uuid()::text, %(account_id)s, 'TEST', 'PAYMENTS', status, amount, currency,
       methods,
       CASE WHEN paid THEN
           methods ->> floor(r_paid_with * jsonb_array_length(methods))::int END,
       CASE WHEN r_payer < 0.01 THEN %(payer_document)s END,
       '{}'::jsonb, 86400, created_at + interval '1 day', 'sandbox',
       CASE WHEN status <> 'REFUSED' THEN created_at + interval '1 second' END,
       CASE WHEN paid THEN round(amount * 0.0099)::bigint END,
       CASE WHEN paid THEN round(amount * 0.005)::bigint END,
       CASE WHEN paid THEN
           least(now(), created_at + interval '2 days' * power(r_delay, 4)) END,
       created_at,
       CASE WHEN paid THEN least(now(), created_at + interval '2 days' * power(r_delay, 4))
            ELSE created_at END
FROM offered
"""


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


def argument_parser(description: str) -> argparse.ArgumentParser:
    """A benchmark's parser, its epilog naming the environment variables every benchmark reads."""
    return argparse.ArgumentParser(
        description=description,
        epilog=f"Environment: BENCH_DATABASE_ADMIN_URL (default {DEFAULT_ADMIN_URL}), "
        f"BENCH_REDIS_URL (default {DEFAULT_REDIS_URL}).",
    )


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


@dataclass(frozen=True)
class Setup:
    """What a run's processes share: the throwaway database, the Redis DB and the app's
    environment for both."""

    database_url: str
    redis_url: str
    env: dict[str, str]

    def facts(self) -> dict[str, str]:
        """The database and Redis of the run, for its configuration (no passwords)."""
        return {"database": redacted(self.database_url), "redis": redacted(self.redis_url)}


@contextmanager
def migrated_setup(environment: Callable[[str, str], dict[str, str]]) -> Iterator[Setup]:
    """The benchmark's Redis DB (flushed) and a throwaway database, migrated with the app's
    environment `environment(database_url, redis_url)`."""
    redis_url = redis_url_from_env()
    with flushed_redis(redis_url), throwaway_database(admin_url_from_env()) as database_url:
        env = environment(database_url, redis_url)
        flask_cli(env, "db", "upgrade")
        yield Setup(database_url, redis_url, env)


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


def run_in_repo(
    command: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command in the repo to its end, its output captured as text."""
    return subprocess.run(  # noqa: S603 (our own executables, and git from PATH)
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
    )


def flask_cli(env: dict[str, str], *args: str) -> str:
    """Run `flask --app wsgi ARGS` in the repo; its stdout, or BenchmarkError with its stderr."""
    done = run_in_repo([str(BIN / "flask"), "--app", "wsgi", *args], env)
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


def stop(process: subprocess.Popen, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """SIGTERM (graceful), then, after `timeout` seconds, SIGKILL to the process's whole
    group (started with `start_new_session=True`)."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def logged_process(
    command: list[str], env: dict[str, str], stop_timeout: float = STOP_TIMEOUT_SECONDS
) -> Iterator[tuple[subprocess.Popen, IO[str]]]:
    """`command` started in the repo in its own session, its output in a temp file (for
    `tail`); stopped (`stop`, killed after `stop_timeout`) on the way out."""
    with tempfile.TemporaryFile(mode="a+") as log:
        process = subprocess.Popen(  # noqa: S603 (our own executables)
            command, cwd=REPO_ROOT, env=env, stdout=log, stderr=log, start_new_session=True
        )
        try:
            yield process, log
        finally:
            stop(process, stop_timeout)


def tail(log: IO[str]) -> str:
    """The end of a child process's log file."""
    log.seek(0)
    return log.read()[-LOG_TAIL:]


def git(*args: str) -> str:
    return run_in_repo(["git", *args]).stdout.strip()


def git_commit() -> str:
    """The short commit; the app runs the working tree, so say when it differs."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit} (+ uncommitted changes)" if changed else commit


def machine_facts() -> dict[str, object]:
    """The first lines of every benchmark's configuration: what ran, where, how busy."""
    return {
        "commit": git_commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_before": round(os.getloadavg()[0], 2),
    }


def heading(title: str, config: dict, width: int = 20) -> list[str]:
    """A report's first lines: its title and its configuration, one key a line."""
    return [title, *(f"  {key:<{width}} {value}" for key, value in config.items()), ""]


def seed_transactions(
    database_url: str, account_id: str, rows: int, payer_document: str | None = None
) -> float:
    """`rows` transactions for the account in one INSERT … SELECT (SEED_TRANSACTIONS_SQL);
    returns its seconds."""
    with psycopg.connect(database_url) as conn:
        started = time.perf_counter()
        conn.execute("SELECT setseed(%s)", (SEED_SEED,))
        conn.execute(
            SEED_TRANSACTIONS_SQL,
            {"rows": rows, "account_id": account_id, "payer_document": payer_document},
        )
        conn.commit()
        return time.perf_counter() - started


def vacuum_analyze(database_url: str, *tables: str) -> float:
    """Fresh planner statistics and visibility map, as autovacuum would leave tables this
    size; returns its seconds."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        started = time.perf_counter()
        for table in tables:
            conn.execute(f"VACUUM (ANALYZE) {table}")
        return time.perf_counter() - started


# Where the machine's CPU goes during a phase (Linux /proc): the processes whose command
# line contains each pattern, summed. PostgreSQL's backends and Redis are matched by name.
CPU_GROUPS = {
    "app": "wsgi:app",
    "floor": "floor_app:app",
    "postgres": "postgres",
    "redis": "redis-server",
}


def cpu_seconds_by_group(groups: dict[str, str] = CPU_GROUPS) -> dict[str, float]:
    """User plus system CPU seconds used so far by each group's live processes."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = dict.fromkeys(groups, 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        for group, pattern in groups.items():
            if pattern in command:
                totals[group] += (int(fields[11]) + int(fields[12])) / ticks
                break
    return totals


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (values need not be sorted); nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * fraction)) - 1]


def percentile_ms(values: list[float], fraction: float) -> float:
    """`percentile` of durations in seconds, in milliseconds rounded to 0.01."""
    return round(percentile(values, fraction) * 1000, 2)


def summary_ms(values: list[float]) -> dict[str, float | int]:
    """count, p50, p90, p99 and max of durations in seconds, as milliseconds."""
    return {
        "count": len(values),
        **{
            name: percentile_ms(values, fraction)
            for name, fraction in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99))
        },
        "max_ms": round(max(values) * 1000, 2) if values else math.nan,
    }


def errors_summary(phase: str, errors: list[str], total: int, things: str) -> str:
    """How many of `total` failed, and the first SHOWN_ERRORS errors."""
    shown = "\n".join(f"  {error}" for error in errors[:SHOWN_ERRORS])
    return (
        f"{phase}: {len(errors)} of {total} {things} failed; "
        f"first {min(len(errors), SHOWN_ERRORS)}:\n{shown}"
    )


def time_get(
    session: requests.Session, url: str, api_key: str, repeats: int, warmup: int = 1
) -> tuple[list[float], dict]:
    """`warmup` uncounted GETs, then `repeats` timed ones (each must answer 200); their
    seconds and the last answer's JSON."""
    latencies, answer = [], {}
    for index in range(warmup + repeats):
        started = time.perf_counter()
        response = session.get(url, headers={"apikey": api_key}, timeout=REQUEST_TIMEOUT_SECONDS)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise BenchmarkError(f"GET {url}: {response.status_code} {response.text[:300]}")
        if index >= warmup:
            latencies.append(elapsed)
        answer = response.json()
    return latencies, answer


def statements_of(
    engine: sa.Engine, call: Callable[[], object], tables: tuple[str, ...]
) -> list[tuple[str, object]]:
    """The SELECTs `call` runs that read one of `tables`, with their driver parameters
    (SQLAlchemy's `before_cursor_execute`), to replay under EXPLAIN."""
    reads = re.compile(rf"\bFROM ({'|'.join(tables)})\b")
    captured: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().startswith("SELECT") and reads.search(statement):
            captured.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    if not captured:
        raise BenchmarkError(f"No statement on {', '.join(tables)} was run.")
    return captured


def explain_analyze(connection: sa.Connection, statement: str, parameters: object) -> list[str]:
    """The lines of `EXPLAIN (ANALYZE, BUFFERS)` of a captured statement."""
    return (
        connection.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS) {statement}", parameters)
        .scalars()
        .all()
    )


def explained_statements(
    engine: sa.Engine,
    session: Session | scoped_session,
    call: Callable[[], object],
    tables: tuple[str, ...],
) -> list[tuple[str, dict]]:
    """Each SELECT `call` runs on `tables` (`statements_of`), replayed under EXPLAIN in
    `session` and rolled back: the statement and its `plan_summary`."""
    statements = statements_of(engine, call, tables)
    session.rollback()
    explained = []
    for statement, parameters in statements:
        explained.append(
            (statement, plan_summary(explain_analyze(session.connection(), statement, parameters)))
        )
        session.rollback()
    return explained


def plan_summary(lines: list[str]) -> dict:
    """Planning and execution time, the scans (with their index), the rows the scans read
    and threw away (`Rows Removed by Filter`), and the top node's buffers."""
    text = "\n".join(lines)

    def milliseconds(label: str) -> float:
        found = re.search(rf"{label} Time: ([\d.]+) ms", text)
        return float(found.group(1)) if found else math.nan

    scans = []
    for line in lines:
        found = re.search(r"((?:Parallel )?[\w ]*Scan(?: Backward)?(?: using \w+)? on \w+)", line)
        scan = found.group(1).strip() if found else None
        if scan:
            scan = re.sub(r" on (transactions|med_cases|med_case_evidence)$", "", scan)
        if scan and scan not in scans:
            scans.append(scan)
    buffers = next((line.strip() for line in lines if "Buffers:" in line), "")
    removed = sum(int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", text))
    return {
        "planning_ms": milliseconds("Planning"),
        "execution_ms": milliseconds("Execution"),
        "scans": scans,
        "rows_removed": removed,
        "buffers": buffers.removeprefix("Buffers: "),
    }


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
