"""Benchmark: Pix charge creation over HTTP, next to a bare endpoint of the same app and a
bare durable write.

Usage: `.venv/bin/python bench/charges.py [--workers 2 --threads 4 --concurrency 8 ...]`
or `make bench`. Never part of the test suite.

What it does, in one run on this machine:

1. Creates a throwaway PostgreSQL database (`acme_bench_<timestamp>_<pid>`) and flushes the
   benchmark's Redis DB (14 by default); migrates; creates an account and a test API key with
   the operator CLI.
2. Starts the app under gunicorn (gthread workers) with `APP_ENV=development` and the
   account's velocity limit raised to 10,000,000, so the guard never refuses benchmark
   traffic: it counts the live charges once, then its bound in Redis stands in for the count,
   as for any account well below its limit.
   Beside it, with the same gunicorn options, the durable-write floor (`bench/floor_app.py`,
   issue 22): a bare WSGI app whose POST does one `INSERT … RETURNING` and a `COMMIT` on the
   same database.
3. Drives four phases with a pool of HTTP client threads (one `requests.Session` each), each
   after a short warm-up that is not counted. The phases take turns in `--rounds` rounds (4
   by default), each round with its share of every phase's requests, so a slow stretch of a
   shared machine weighs on a phase and on the floor it is read against alike:
   - `healthz`: `GET /healthz`, the bare endpoint: routing, the request log line and a JSON
     answer, no database. It measures the server, the framework and the client.
   - `floor`: `POST /` to the floor app with a JSON body the size of a charge request; each
     must answer 201. What a durable write costs here with no framework, no validation and
     no events: the least charge creation could cost.
   - `create`: `POST /v1/charges` (API key, idempotency key, velocity guard, BR Code, events,
     commit); each must answer 201 with a pending charge. All charges belong to one account,
     like one busy merchant's traffic.
   - `get`: `GET /v1/charges/<id>` on the charges made by `create`; each must answer 200.
   Charge creation enqueues the webhook relay job in Redis after commit; no RQ worker runs.
4. Prints, per phase, requests, errors (any answer but the expected one, or no answer),
   elapsed time, requests/s, latency percentiles and the CPU the client itself used (in cores:
   near the machine's core count, the client is what limits the figures), the CPU the
   server's processes (gunicorn's, the app's or the floor's), PostgreSQL and Redis used per
   request (milliseconds, from /proc: where a phase's machine time goes), then the ratios to
   `healthz` and to `floor`; with `--json` also one JSON object. Stops both servers and
   drops the database at the end, also on failure, Ctrl-C or SIGTERM. Any error makes the
   exit status 1.

How to read the ratios: the bare endpoint runs on the same server, machine and run, so
dividing by it takes out much of what the machine and the load generator contribute (not all:
on a small machine the client takes CPU from the server, most in the fastest phase).
`throughput create / healthz` is the share of the bare server's requests/s left once each
request creates a charge (1.0 would mean charge creation is free); `p50` and `p99 create /
healthz` are how many times slower a charge creation is than the bare request. `create /
floor` is the share of a bare durable write's requests/s that charge creation keeps (issue 22
asks for 0.40x, with p99 at most 3x the floor's). Compare ratios
between commits on the same machine; absolute figures only between runs on the same machine.
"""

import argparse
import json
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import IO
from urllib.parse import urlsplit

import psycopg
import requests
from common import (
    BIN,
    REQUEST_TIMEOUT_SECONDS,
    STARTUP_TIMEOUT_SECONDS,
    BenchmarkError,
    Setup,
    argument_parser,
    at_least,
    base_environment,
    cpu_seconds_by_group,
    create_test_account,
    errors_summary,
    free_port,
    logged_process,
    machine_facts,
    migrated_setup,
    percentile,
    run,
    tail,
)

ACCOUNT_VELOCITY_LIMIT = 10_000_000
API_RATE_LIMIT = 10_000_000  # per minute: counted on every request, never refusing the benchmark
DEFAULT_SIZES = {"healthz": 2000, "floor": 2000, "create": 1000, "get": 1000}
# The phases take turns, so a slower or busier stretch of a shared VM weighs on every phase
# and on its floor alike, instead of on whichever phase happened to run through it.
DEFAULT_ROUNDS = 4
FLOOR_APP = "floor_app:app"  # bench/floor_app.py, served with --pythonpath bench
FLOOR_TABLE_SQL = (
    "CREATE TABLE bench_floor ("
    "id bigserial PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
)
# A body the size of the charge requests `create` sends.
FLOOR_BODY = {"amount": 1000, "payment_method": "pix", "description": "bench"}

Request = Callable[[requests.Session, int], requests.Response]
Check = Callable[[requests.Response], str | None]


@dataclass
class Sample:
    """One request's latency, its error if any, and the body it answered: only the body is
    kept, not the `Response` (its headers, cookies and connection are dozens of objects,
    and thousands of them kept made the client's own garbage collections pause it longer
    with every phase it ran, which showed as the next phases' tail latency)."""

    latency: float
    error: str | None
    body: bytes | None


@dataclass
class PhaseResult:
    name: str
    samples: list[Sample]
    elapsed: float
    client_cpu: float
    server_cpu: dict[str, float]  # CPU seconds per process group (`cpu_seconds_by_group`)

    @property
    def errors(self) -> list[str]:
        return [sample.error for sample in self.samples if sample.error]

    @property
    def requests_per_second(self) -> float:
        return len(self.samples) / self.elapsed

    def percentile_ms(self, fraction: float) -> float:
        """Nearest-rank percentile of the latencies, in milliseconds."""
        return percentile([sample.latency for sample in self.samples], fraction) * 1000

    def figures(self) -> dict[str, float | int]:
        return {
            "requests": len(self.samples),
            "errors": len(self.errors),
            "elapsed_s": round(self.elapsed, 3),
            "requests_per_s": round(self.requests_per_second, 1),
            "p50_ms": round(self.percentile_ms(0.50), 2),
            "p90_ms": round(self.percentile_ms(0.90), 2),
            "p99_ms": round(self.percentile_ms(0.99), 2),
            "max_ms": round(self.percentile_ms(1.0), 2),
            "client_cpu_cores": round(self.client_cpu / self.elapsed, 2),
            **{
                f"{group}_cpu_ms_per_request": round(1000 * seconds / len(self.samples), 2)
                for group, seconds in self.server_cpu.items()
            },
        }

    def joined(self, later: "PhaseResult") -> "PhaseResult":
        """This phase's figures and a later round's of the same phase, as one phase."""
        return PhaseResult(
            self.name,
            self.samples + later.samples,
            self.elapsed + later.elapsed,
            self.client_cpu + later.client_cpu,
            {
                group: seconds + later.server_cpu[group]
                for group, seconds in self.server_cpu.items()
            },
        )


@dataclass
class Phase:
    name: str
    total: int
    send: Request
    expect: Check


def add_gunicorn_options(parser: argparse.ArgumentParser) -> None:
    """`--workers` and `--threads`, for `gunicorn`."""
    parser.add_argument(
        "--workers", type=at_least(1), default=2, help="gunicorn workers (default 2)"
    )
    parser.add_argument(
        "--threads", type=at_least(1), default=4, help="threads per worker (default 4)"
    )


def gunicorn_description(args: argparse.Namespace) -> str:
    """The `--workers` and `--threads` options, for a configuration."""
    return f"{args.workers} workers x {args.threads} threads (gthread)"


def parse_args() -> argparse.Namespace:
    parser = argument_parser(
        "Pix charge creation over HTTP (gunicorn + PostgreSQL) next to /healthz."
    )
    add_gunicorn_options(parser)
    parser.add_argument(
        "--concurrency", type=at_least(1), default=8, help="client threads in flight (default 8)"
    )
    parser.add_argument(
        "--requests",
        type=at_least(1),
        default=None,
        help="requests per phase (default 2000 for healthz, 1000 for create and get)",
    )
    parser.add_argument(
        "--warmup",
        type=at_least(0),
        default=50,
        help="uncounted requests before each phase (default 50)",
    )
    parser.add_argument(
        "--rounds",
        type=at_least(1),
        default=DEFAULT_ROUNDS,
        help=f"rounds the phases take turns in, each with its share of the requests "
        f"(default {DEFAULT_ROUNDS})",
    )
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    return parser.parse_args()


def app_environment(database_url: str, redis_url: str) -> dict[str, str]:
    """The run's environment for the app under gunicorn: its PUBLIC_BASE_URL is where
    `gunicorn` serves it (a free port), and the limits never refuse the benchmark."""
    return {
        **base_environment(database_url, redis_url),
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{free_port()}",
        "FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT": str(ACCOUNT_VELOCITY_LIMIT),
        "API_RATE_LIMIT_PER_MINUTE": str(API_RATE_LIMIT),
        "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE": str(API_RATE_LIMIT),
    }


@contextmanager
def gunicorn(env: dict[str, str], workers: int, threads: int) -> Iterator[str]:
    """The app under gunicorn at the environment's PUBLIC_BASE_URL (`app_environment`),
    answering /healthz; yields that base URL. Logs go to a temp file, shown when the server
    fails to start."""
    base_url = env["PUBLIC_BASE_URL"]
    with served("wsgi:app", base_url, env, workers, threads, "/healthz"):
        yield base_url


@contextmanager
def floor_server(env: dict[str, str], workers: int, threads: int) -> Iterator[str]:
    """The durable-write floor (`bench/floor_app.py`) under the same gunicorn options, on a
    port of its own, writing to the run's database; yields its base URL."""
    base_url = f"http://127.0.0.1:{free_port()}"
    with served(FLOOR_APP, base_url, env, workers, threads, "/", "--pythonpath", "bench"):
        yield base_url


@contextmanager
def served(
    app: str, base_url: str, env: dict[str, str], workers: int, threads: int, health: str,
    *options: str,
) -> Iterator[None]:  # fmt: skip
    """`app` under gunicorn (gthread) at `base_url`, once `health` answers 200."""
    command = [
        str(BIN / "gunicorn"),
        app,
        "--bind",
        urlsplit(base_url).netloc,
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        *options,
    ]
    with logged_process(command, env) as (server, log):
        wait_until_healthy(server, base_url + health, log)
        yield


def wait_until_healthy(server: subprocess.Popen, health_url: str, log: IO[str]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            if requests.get(health_url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise BenchmarkError(f"gunicorn did not answer {health_url} with 200:\n{tail(log)}")


def run_phase(name: str, total: int, concurrency: int, send: Request, expect: Check) -> PhaseResult:
    """`total` requests from `concurrency` client threads; per-request latency and errors."""
    samples: list[Sample | None] = [None] * total
    indices = iter(range(total))
    lock = threading.Lock()
    stopping = threading.Event()

    def client() -> None:
        with requests.Session() as session:
            while not stopping.is_set():
                with lock:
                    index = next(indices, None)
                if index is None:
                    return
                samples[index] = timed(session, index, send, expect)

    started, cpu_started = time.perf_counter(), time.process_time()
    server_cpu_started = cpu_seconds_by_group()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        try:
            for future in [pool.submit(client) for _ in range(concurrency)]:
                future.result()
        finally:
            stopping.set()
    return PhaseResult(
        name,
        [sample for sample in samples if sample is not None],
        time.perf_counter() - started,
        time.process_time() - cpu_started,
        {
            group: seconds - server_cpu_started[group]
            for group, seconds in cpu_seconds_by_group().items()
        },
    )


def timed(session: requests.Session, index: int, send: Request, expect: Check) -> Sample:
    started = time.perf_counter()
    try:
        response = send(session, index)
    except requests.RequestException as exc:
        return Sample(time.perf_counter() - started, f"{type(exc).__name__}: {exc}", None)
    latency = time.perf_counter() - started
    return Sample(latency, expect(response), response.content)


def expect_status(status: int) -> Check:
    def check(response: requests.Response) -> str | None:
        if response.status_code == status:
            return None
        return f"{response.status_code} {response.text[:300].strip()}"

    return check


def expect_pending_charge(response: requests.Response) -> str | None:
    """201 with a pending charge: a charge the provider refused took another path."""
    error = expect_status(201)(response)
    if error is None and response.json().get("status") != "pending":
        return f"201 but not pending: {response.text[:300].strip()}"
    return error


def phases(
    base_url: str, floor_url: str, api_key: str, sizes: dict[str, int], charge_ids: list[str]
) -> list[Phase]:
    """The four phases in order; `get` reads the ids that `create` leaves in charge_ids."""
    headers = {"apikey": api_key}

    def healthz(session: requests.Session, index: int) -> requests.Response:
        return session.get(f"{base_url}/healthz", timeout=REQUEST_TIMEOUT_SECONDS)

    def floor(session: requests.Session, index: int) -> requests.Response:
        return session.post(
            f"{floor_url}/", json={**FLOOR_BODY, "amount": 1000 + index},
            timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip

    def create(session: requests.Session, index: int) -> requests.Response:
        return session.post(
            f"{base_url}/v1/charges",
            headers={**headers, "Idempotency-Key": f"bench-{secrets.token_hex(12)}"},
            json={"amount": 1000 + index, "payment_method": "pix", "description": "bench"},
            timeout=REQUEST_TIMEOUT_SECONDS,
        )

    def get(session: requests.Session, index: int) -> requests.Response:
        charge_id = charge_ids[index % len(charge_ids)]
        return session.get(
            f"{base_url}/v1/charges/{charge_id}", headers=headers, timeout=REQUEST_TIMEOUT_SECONDS
        )

    return [
        Phase("healthz", sizes["healthz"], healthz, expect_status(200)),
        Phase("floor", sizes["floor"], floor, expect_status(201)),
        Phase("create", sizes["create"], create, expect_pending_charge),
        Phase("get", sizes["get"], get, expect_status(200)),
    ]


def measure(
    base_url: str,
    floor_url: str,
    api_key: str,
    sizes: dict[str, int],
    warmup: int,
    concurrency: int,
    rounds: int,
) -> dict[str, PhaseResult]:
    """Warm up each phase, then measure the phases in turn, `rounds` times, each round with its
    share of every phase's requests; a phase's rounds add up to its figures. A warm-up error
    stops the run (the setup is broken); errors in a measured phase are counted and the run
    goes on."""
    charge_ids: list[str] = []
    results: dict[str, PhaseResult] = {}
    for round_number in range(rounds):
        for phase in phases(base_url, floor_url, api_key, sizes, charge_ids):
            if phase.name == "get" and not charge_ids:
                break  # every create failed: nothing to read, and those errors fail the run
            if round_number == 0:
                warm_up = run_phase(
                    f"{phase.name} warm-up", warmup, concurrency, phase.send, phase.expect
                )
                if warm_up.errors:
                    raise BenchmarkError(describe_errors(warm_up))
            share = round_share(phase.total, rounds, round_number)
            result = run_phase(phase.name, share, concurrency, phase.send, phase.expect)
            earlier = results.get(phase.name)
            results[phase.name] = earlier.joined(result) if earlier else result
            if phase.name == "create":
                charge_ids.extend(created_ids(result))
    return results


def round_share(total: int, rounds: int, round_number: int) -> int:
    """A round's share of a phase's `total` requests; the first rounds take the remainder."""
    return total // rounds + (1 if round_number < total % rounds else 0)


def created_ids(result: PhaseResult) -> list[str]:
    return [json.loads(s.body)["id"] for s in result.samples if s.error is None and s.body]


def describe_errors(result: PhaseResult) -> str:
    return errors_summary(result.name, result.errors, len(result.samples), "requests")


# Each measured phase next to the floor it is read against: every phase to the bare
# endpoint, and the writes (the floor itself and charge creation) to the bare durable write.
RATIOS = (
    ("floor", "healthz"),
    ("create", "healthz"),
    ("get", "healthz"),
    ("create", "floor"),
)


def ratios(results: dict[str, PhaseResult]) -> dict[str, dict[str, float]]:
    return {
        f"{name} / {base_name}": ratio(results[name], results[base_name])
        for name, base_name in RATIOS
        if name in results and base_name in results
    }


def ratio(result: PhaseResult, base: PhaseResult) -> dict[str, float]:
    return {
        "throughput": round(result.requests_per_second / base.requests_per_second, 3),
        "p50_latency": round(result.percentile_ms(0.5) / base.percentile_ms(0.5), 2),
        "p99_latency": round(result.percentile_ms(0.99) / base.percentile_ms(0.99), 2),
    }


def configuration(args: argparse.Namespace, setup: Setup) -> dict:
    return {
        **machine_facts(),
        "workers": args.workers,
        "threads": args.threads,
        "worker_class": "gthread",
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "rounds": args.rounds,
        **setup.facts(),
        "account_velocity_limit": ACCOUNT_VELOCITY_LIMIT,
    }


def report(config: dict, results: dict[str, PhaseResult]) -> str:
    lines = [
        "Acme Pay benchmark: Pix charge creation over HTTP",
        *(f"  {key:<23} {value}" for key, value in config.items()),
        "  (account velocity limit raised so the guard never refuses: its bound spares the count)",
        "",
        f"{'phase':<8}{'requests':>9}{'errors':>7}{'elapsed s':>10}{'req/s':>9}"
        f"{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}{'client cpu':>11}"
        f"{'server ms':>10}{'pg ms':>7}{'redis ms':>9}",
    ]
    for name, result in results.items():
        f = result.figures()
        lines.append(
            f"{name:<8}{f['requests']:>9}{f['errors']:>7}{f['elapsed_s']:>10.2f}"
            f"{f['requests_per_s']:>9.1f}{f['p50_ms']:>9.2f}{f['p90_ms']:>9.2f}"
            f"{f['p99_ms']:>9.2f}{f['max_ms']:>9.2f}{f['client_cpu_cores']:>11.2f}"
            f"{f['app_cpu_ms_per_request'] + f['floor_cpu_ms_per_request']:>10.2f}"
            f"{f['postgres_cpu_ms_per_request']:>7.2f}{f['redis_cpu_ms_per_request']:>9.2f}"
        )
    lines.append("")
    for label, ratio in ratios(results).items():
        lines.append(
            f"{label}: throughput {ratio['throughput']:.3f}x, "
            f"p50 latency {ratio['p50_latency']:.2f}x, p99 latency {ratio['p99_latency']:.2f}x"
        )
    return "\n".join(lines)


def as_json(config: dict, results: dict[str, PhaseResult]) -> str:
    return json.dumps(
        {
            "config": config,
            "phases": {name: result.figures() for name, result in results.items()},
            "ratios": ratios(results),
        }
    )


def benchmark(args: argparse.Namespace) -> None:
    sizes = dict.fromkeys(DEFAULT_SIZES, args.requests) if args.requests else DEFAULT_SIZES
    with ExitStack() as stack:
        setup = stack.enter_context(migrated_setup(app_environment))
        config = configuration(args, setup)
        _, api_key = create_test_account(setup.env)
        with psycopg.connect(setup.database_url) as conn:
            conn.execute(FLOOR_TABLE_SQL)
        base_url = stack.enter_context(gunicorn(setup.env, args.workers, args.threads))
        floor_url = stack.enter_context(floor_server(setup.env, args.workers, args.threads))
        results = measure(
            base_url, floor_url, api_key, sizes, args.warmup, args.concurrency, args.rounds
        )
    print(report(config, results))
    if args.json:
        print(as_json(config, results))
    failed = [describe_errors(result) for result in results.values() if result.errors]
    if failed:
        raise BenchmarkError("\n".join(failed))


def main() -> int:
    return run(benchmark, parse_args())


if __name__ == "__main__":
    sys.exit(main())
