"""Profiles of the hot paths with cProfile, against PostgreSQL and Redis: where the time of a
charge creation, a charge GET, a list page, the stats and a webhook delivery goes.

Usage: `.venv/bin/python bench/hotpaths.py [--requests 200 --stats-rows 1000000 --deliveries
200 --top 12]` or `make bench-hotpaths`. Never part of the test suite.

What it does, in one run on this machine:

1. Creates a throwaway database and flushes the benchmark's Redis DB, like the benchmarks;
   migrates; creates an account with a test API key.
2. `http`: in this process with the app (`create_app`, the run's environment, rate limits
   raised like bench/charges.py), drives the routes through Flask's test client (no HTTP
   server: the WSGI app, PostgreSQL and Redis only) under cProfile, after uncounted warm-up
   calls: `POST /v1/charges`, `GET /v1/charges/<id>`, the first page of `GET /v1/charges`,
   `/v1/payments` and `/v1/med/cases`, then `GET /v1/payments/stats` and `/metrics` for 365
   days over `--stats-rows` seeded transactions (bench/common.py's seed, their daily totals
   rebuilt). For each: ms per call, the share of the wall time in psycopg's
   `Cursor.execute` (a statement sent and PostgreSQL's answer awaited), and the top
   functions by own time and, among the app's, by cumulative time.
3. `worker`: `--deliveries` webhook deliveries to a local receiver (bench/webhooks.py's
   receiver and seed), worked off in burst mode by a fresh process (like `python
   worker.py`: create_app, app context, nothing run yet) twice: with RQ's forking `Worker`
   (a work horse per job, as worker.py ran until this profile) and with worker.py's
   `AppWorker`, an RQ `SimpleWorker` (the job in the worker process), each timed, the second
   also under cProfile. Their ratio is what the fork per job costs.
4. Prints the figures. Drops the database and flushes Redis at the end, also on failure,
   Ctrl-C or SIGTERM.

cProfile's own overhead inflates Python-heavy code more than waiting (roughly 1.5-2x), so
read the shares, not the absolute times; the benchmarks give those.
"""

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from charges import app_environment
from common import (
    BIN,
    LOG_TAIL,
    REPO_ROOT,
    STATS_TABLES,
    BenchmarkError,
    argument_parser,
    at_least,
    create_test_account,
    free_port,
    heading,
    machine_facts,
    migrated_setup,
    run,
    run_in_repo,
    seed_transactions,
    vacuum_analyze,
)
from webhooks import app_context, receiver, seed_deliveries

WARMUP_CALLS = 10
STATS_CALLS = 3
WORKER_CLASSES = ("fork", "simple")
# psycopg's calls that send a statement and wait for PostgreSQL's answer.
DATABASE_WAIT = ("psycopg/cursor.py", "execute")


def parse_args() -> argparse.Namespace:
    parser = argument_parser(
        "cProfile of charge creation and GET, list pages, stats and webhook deliveries against "
        "PostgreSQL and Redis."
    )
    parser.add_argument(
        "--requests", type=at_least(1), default=200, help="profiled calls per route (200)"
    )
    parser.add_argument(
        "--stats-rows",
        type=at_least(1),
        default=1_000_000,
        help="transactions seeded before the stats are profiled (default 1000000)",
    )
    parser.add_argument(
        "--deliveries",
        type=at_least(1),
        default=200,
        help="webhook deliveries per worker class (default 200)",
    )
    parser.add_argument("--top", type=at_least(1), default=12, help="functions shown (12)")
    parser.add_argument("--burst", choices=WORKER_CLASSES, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    return parser.parse_args()


def where(function: tuple[str, int, str]) -> str:
    """`path:line(name)` with the site-packages or repo prefix dropped."""
    path, line, name = function
    for prefix in ("site-packages/", f"{REPO_ROOT}/"):
        if prefix in path:
            path = path.split(prefix, 1)[1]
    return f"{path}:{line}({name})" if line else name


def top_functions(stats: pstats.Stats, top: int) -> list[str]:
    """The top functions by own time, then the app's by cumulative time."""
    rows = stats.stats  # {function: (primitive calls, calls, own, cumulative, callers)}
    by_own = sorted(rows.items(), key=lambda item: item[1][2], reverse=True)[:top]
    app_rows = [item for item in rows.items() if f"{REPO_ROOT}/app/" in item[0][0]]
    by_cumulative = sorted(app_rows, key=lambda item: item[1][3], reverse=True)[:top]
    lines = [f"    {'calls':>8}{'own s':>8}{'cum s':>8}  by own time"]
    lines += [f"    {v[1]:>8}{v[2]:>8.3f}{v[3]:>8.3f}  {where(f)}" for f, v in by_own]
    lines += [f"    {'calls':>8}{'own s':>8}{'cum s':>8}  the app's functions by cumulative time"]
    lines += [f"    {v[1]:>8}{v[2]:>8.3f}{v[3]:>8.3f}  {where(f)}" for f, v in by_cumulative]
    return lines


def database_seconds(stats: pstats.Stats) -> float:
    """Cumulative time in psycopg's Cursor.execute (sending a statement, waiting for it)."""
    path, name = DATABASE_WAIT
    return sum(
        values[3]
        for (file, _, function), values in stats.stats.items()
        if file.endswith(path) and function == name
    )


def profiled(call: Callable[[int], None], count: int, top: int) -> dict:
    """`count` calls of `call(index)` under cProfile; ms per call, the database's share of the
    wall time, and the top functions."""
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for index in range(count):
        call(index)
    profiler.disable()
    elapsed = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    return {
        "ms_per_call": round(elapsed / count * 1000, 2),
        "database_share": round(database_seconds(stats) / elapsed, 3),
        "top": top_functions(stats, top),
    }


def profile_http(env: dict[str, str], database_url: str, args: argparse.Namespace) -> dict:
    """The routes through the test client; the stats after seeding `--stats-rows`."""
    results = {}
    with app_context(env):
        from flask import current_app

        from app.services.transactions.payment_totals import rebuild_totals

        account_id, api_key = create_test_account(env)
        client = current_app.test_client()
        headers = {"apikey": api_key}
        created: list[str] = []

        def expect(answer, status: int = 200) -> None:
            if answer.status_code != status:
                raise BenchmarkError(f"{answer.request.path}: {answer.status_code} {answer.text}")

        def create(index: int) -> None:
            answer = client.post(
                "/v1/charges",
                headers={**headers, "Idempotency-Key": f"profile-{len(created):08d}"},
                json={"amount": 1000 + index, "payment_method": "pix", "description": "bench"},
            )
            expect(answer, 201)
            created.append(answer.json["id"])

        def getter(path: str) -> Callable[[int], None]:
            return lambda index: expect(client.get(path.format(index=index), headers=headers))

        def get_charge(index: int) -> None:
            expect(client.get(f"/v1/charges/{created[index % len(created)]}", headers=headers))

        routes = {
            "POST /v1/charges": create,
            "GET /v1/charges/<id>": get_charge,
            "GET /v1/charges (first page)": getter("/v1/charges"),
            "GET /v1/payments (page 1)": getter("/v1/payments"),
            "GET /v1/med/cases (first page)": getter("/v1/med/cases"),
        }
        for name, call in routes.items():
            for index in range(WARMUP_CALLS):
                call(index)
            results[name] = profiled(call, args.requests, args.top)
        seed_transactions(database_url, account_id, args.stats_rows)
        rebuild_totals(account_id)  # the seeding bypasses the app's daily totals
        vacuum_analyze(database_url, *STATS_TABLES)
        for endpoint in ("stats", "metrics"):
            call = getter(f"/v1/payments/{endpoint}?days=365")
            call(0)
            name = f"GET /v1/payments/{endpoint}?days=365 ({args.stats_rows} rows)"
            results[name] = profiled(call, STATS_CALLS, args.top)
    return results


def burst(env: dict[str, str], kind: str, count: int, top: int) -> dict:
    """A fresh process works off the queued deliveries in burst mode with one worker class;
    its seconds (and, for `simple`, its profile)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [str(BIN / "python"), str(Path(__file__)), "--burst", kind]
        done = run_in_repo([*command, "--profile-to", out.name, "--top", str(top)], env)
        if done.returncode != 0:
            raise BenchmarkError(f"The {kind} worker failed:\n{done.stderr[-LOG_TAIL:]}")
        figures = json.loads(Path(out.name).read_text())
    if figures["delivered"] < count or figures["failed"] or figures["left"]:
        raise BenchmarkError(
            f"The {kind} worker did not finish every job: {figures}\n{done.stderr[-LOG_TAIL:]}"
        )
    figures["per_second"] = round(count / figures["seconds"], 1)
    return figures


def delivered_count() -> int:
    """Deliveries DELIVERED so far (needs the app context)."""
    import sqlalchemy as sa

    from app.extensions import db
    from app.models import DeliveryStatus, WebhookDelivery

    return db.session.scalar(
        sa.select(sa.func.count()).where(WebhookDelivery.status == DeliveryStatus.DELIVERED)
    )


def burst_worker(kind: str, out: str, top: int) -> None:
    """The body of `--burst`: worker.py's set-up, then one burst with the chosen class."""
    sys.path.insert(0, str(REPO_ROOT))
    from rq import Worker

    from app import create_app
    from app.extensions import QUEUE_NAMES, WEBHOOK_QUEUE, db, get_queue, get_redis
    from worker import AppWorker, JobMetrics

    class ForkingAppWorker(JobMetrics, Worker):
        """worker.py's bookkeeping in a work horse forked per job (RQ's default, and
        worker.py's until this profile), which first drops the parent's connections."""

        def main_work_horse(self, job, queue):
            db.engine.dispose(close=False)
            return super().main_work_horse(job, queue)

    classes = {"fork": ForkingAppWorker, "simple": AppWorker}
    app = create_app({"LOG_LEVEL": "WARNING"})
    with app.app_context():
        worker = classes[kind]([get_queue(name) for name in QUEUE_NAMES], connection=get_redis())
        profiler = cProfile.Profile() if kind == "simple" else None
        delivered_before = delivered_count()
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        worker.work(burst=True, logging_level="WARNING")
        if profiler:
            profiler.disable()
        deliveries = get_queue(WEBHOOK_QUEUE)
        figures: dict = {
            "seconds": round(time.perf_counter() - started, 3),
            "delivered": delivered_count() - delivered_before,
            "finished": deliveries.finished_job_registry.count,
            "failed": deliveries.failed_job_registry.count,
            "left": deliveries.count,
        }
        if profiler:
            stats = pstats.Stats(profiler)
            figures["database_share"] = round(database_seconds(stats) / figures["seconds"], 3)
            figures["top"] = top_functions(stats, top)
    Path(out).write_text(json.dumps(figures))


def profile_worker(env: dict[str, str], args: argparse.Namespace) -> dict:
    """The same number of deliveries for each worker class, seeded afresh each time (after
    relaying what the outbox already holds, so the queue holds only these)."""
    results = {}
    with receiver(free_port(), keep_alive=False) as receiver_url:
        for kind in WORKER_CLASSES:
            with app_context(env):
                from app.jobs.webhooks import relay_events

                relay_events()  # the outbox of the http phase: no endpoint, no delivery
                account_id, _ = create_test_account(env)
                seed_deliveries(account_id, f"{receiver_url}/hooks", 1, args.deliveries)
            results[kind] = burst(env, kind, args.deliveries, args.top)
    results["simple_over_fork"] = round(
        results["simple"]["per_second"] / results["fork"]["per_second"], 2
    )
    return results


def report(config: dict, http: dict, worker: dict) -> str:
    lines = heading("Acme Pay profile: cProfile of the hot paths", config)
    for name, figures in http.items():
        lines.append(
            f"{name}: {figures['ms_per_call']} ms per call under cProfile, "
            f"{figures['database_share']:.0%} of it in psycopg's execute (PostgreSQL)"
        )
        lines += figures["top"]
        lines.append("")
    lines.append(
        f"Webhook deliveries, burst of {config['deliveries']} per worker class (fresh process):"
    )
    for kind in WORKER_CLASSES:
        figures = worker[kind]
        lines.append(f"  {kind:<7}{figures['seconds']:>8.2f} s {figures['per_second']:>8.1f} /s")
    lines.append(f"  simple / fork: {worker['simple_over_fork']}x")
    simple = worker["simple"]
    lines.append(
        f"SimpleWorker under cProfile: {simple['database_share']:.0%} of the burst in psycopg's "
        "execute"
    )
    lines += simple["top"]
    return "\n".join(lines)


def benchmark(args: argparse.Namespace) -> None:
    with migrated_setup(app_environment) as setup:
        config = {
            **machine_facts(),
            "requests": args.requests,
            "stats_rows": args.stats_rows,
            "deliveries": args.deliveries,
        }
        http = profile_http(setup.env, setup.database_url, args)
        worker = profile_worker(setup.env, args)
    print(report(config, http, worker))


def main() -> int:
    args = parse_args()
    if args.burst:
        burst_worker(args.burst, args.profile_to, args.top)
        return 0
    return run(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
