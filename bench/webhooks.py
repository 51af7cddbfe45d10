"""Benchmark: webhook deliveries per second by one RQ worker process, next to a plain loop of
HTTP POSTs to the same local receiver.

Usage: `.venv/bin/python bench/webhooks.py [--deliveries 500 --warmup 20 --json]` or
`make bench-webhooks`. Never part of the test suite.

What it does, in one run on this machine:

1. Creates a throwaway PostgreSQL database and flushes the benchmark's Redis DB (14 by
   default), like bench/charges.py; migrates; creates an account with the operator CLI.
2. Starts a receiver in its own process: a `ThreadingHTTPServer` answering 200 to every POST
   (HTTP/1.0, so one connection per POST; with `--keep-alive`, HTTP/1.1 keeping connections
   open, as most real receivers do) and counting the POSTs and the distinct
   `X-Acme-Delivery-Id`s; `GET /stats` tells the counts.
3. Before any clock starts, in this process with the app (`create_app`, the run's
   environment): registers `--endpoints` test-mode endpoints for `charge.created` at the
   receiver (`/hooks/<n>`: one endpoint may only have WEBHOOK_ENDPOINT_CONCURRENCY attempts
   under way), records warm-up + counted events in the outbox (`record_event`, committed in
   batches), and relays them with the app's own `relay_events()`: one PENDING delivery per
   event and endpoint, and a run of the
   delivery engine per relay batch, enqueued by the relay's after-commit hook. The event
   commits also enqueue relay jobs; those are dropped before relaying, so the queue holds
   only engine runs and the worker measures nothing else.
4. `worker`: starts ONE `python worker.py` (the production entry point: RQ, each job in
   the worker process; the engine claims batches, signs, POSTs from its pool of senders and
   records). The clock starts when the
   warm-up deliveries are DELIVERED (start-up, imports, connections) and stops when all are;
   the database is polled every 20 ms. Then checks that every delivery took one attempt and
   that the receiver got exactly one POST per delivery.
5. `baseline`: in this process, a plain loop of POSTs through one `requests.Session`, with a
   body of a delivery and headers shaped like a delivery's, to the same receiver; the same
   warm-up, then the same count, each of which must answer 200.
6. Prints the configuration, both phases and the ratio `worker / baseline`; with `--json` also
   one JSON object. Stops the worker and the receiver, drops the database and flushes Redis
   at the end, also on failure, Ctrl-C or SIGTERM. Any error makes the exit status 1.

The app is imported inside the functions that use it: the script runs from bench/, so the
repository root goes on sys.path only then, and the receiver process never loads the app.
"""

import argparse
import json
import multiprocessing
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, NamedTuple
from unittest import mock

import psycopg
import requests
import sqlalchemy as sa
from common import (
    BIN,
    REPO_ROOT,
    REQUEST_TIMEOUT_SECONDS,
    STARTUP_TIMEOUT_SECONDS,
    STOP_TIMEOUT_SECONDS,
    BenchmarkError,
    Setup,
    argument_parser,
    at_least,
    base_environment,
    create_test_account,
    free_port,
    heading,
    logged_process,
    machine_facts,
    migrated_setup,
    run,
    tail,
)

EVENT_TYPE = "charge.created"
EVENT_BATCH = 100
RECEIVER_PATH = "/hooks"
POLL_SECONDS = 0.02
STALL_TIMEOUT_SECONDS = 60
WORKER_PROCESS = "1 process: python worker.py"
COUNTS_SQL = """
    SELECT count(*),
           count(*) FILTER (WHERE status = 'DELIVERED'),
           count(*) FILTER (WHERE attempts > 1),
           count(*) FILTER (WHERE last_error IS NOT NULL),
           max(last_error)
    FROM webhook_deliveries
"""


class DeliveryCounts(NamedTuple):
    """The deliveries table at one moment."""

    total: int
    delivered: int
    retried: int
    failed_attempts: int
    an_error: str | None


@dataclass(frozen=True)
class PhaseResult:
    name: str
    count: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds

    def figures(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "seconds": round(self.seconds, 3),
            "per_second": round(self.per_second, 1),
        }


@dataclass(frozen=True)
class Measurement:
    worker: PhaseResult
    baseline: PhaseResult
    worker_start_up: float
    receiver: dict[str, int]
    problems: list[str]

    @property
    def ratio(self) -> float:
        return self.worker.per_second / self.baseline.per_second


@dataclass
class WorkerProcess:
    """A running `python worker.py` (`rq_worker`) and its log."""

    process: subprocess.Popen
    log: IO[str]

    def check(self) -> None:
        """Fail the run at once if the worker has exited: nothing would be worked off."""
        if self.process.poll() is not None:
            raise BenchmarkError(
                f"The worker exited ({self.process.returncode}):\n{tail(self.log)}"
            )


@contextmanager
def rq_worker(env: dict[str, str]) -> Iterator[WorkerProcess]:
    """One `python worker.py` for the run's database and Redis; its logs in a temp file."""
    with logged_process([str(BIN / "python"), "worker.py"], env) as (process, log):
        yield WorkerProcess(process, log)


class CountingServer(ThreadingHTTPServer):
    """Counts the POSTs it answers and the distinct X-Acme-Delivery-Id headers they carry."""

    daemon_threads = True
    # socketserver's default backlog is 5: 16 senders opening connections at once overflowed
    # it on a loaded machine, and a reset connection failed the run. Real servers keep more
    # (nginx 511).
    request_queue_size = 128

    def __init__(self, port: int, keep_alive: bool) -> None:
        super().__init__(("127.0.0.1", port), KeptAliveHandler if keep_alive else ReceiverHandler)
        self.lock = threading.Lock()
        self.posts = 0
        self.delivery_ids: set[str] = set()

    def count(self, delivery_id: str | None) -> None:
        with self.lock:
            self.posts += 1
            if delivery_id:
                self.delivery_ids.add(delivery_id)

    def stats(self) -> dict[str, int]:
        with self.lock:
            return {"posts": self.posts, "delivery_ids": len(self.delivery_ids)}


class ReceiverHandler(BaseHTTPRequestHandler):
    """200 `{"ok":true}` to every POST, the counts to every GET."""

    server: CountingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.count(self.headers.get("X-Acme-Delivery-Id"))
        self.answer(b'{"ok":true}')

    def do_GET(self) -> None:
        self.answer(json.dumps(self.server.stats()).encode())

    def answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """No line per request."""


class KeptAliveHandler(ReceiverHandler):
    """The same answers over HTTP/1.1: a connection stays open for the client's next POST.
    Without Nagle's algorithm, as servers that keep connections alive run (the body, written
    after the headers, would otherwise wait for the client's delayed ACK)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


def serve_receiver(port: int, keep_alive: bool) -> None:
    """The receiver process's body: serve until terminated. Ctrl-C is the parent's to handle
    (it stops this process on its way out)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    CountingServer(port, keep_alive).serve_forever()


@contextmanager
def receiver(port: int, keep_alive: bool) -> Iterator[str]:
    """The receiver in its own (spawned) process; yields its base URL once it answers."""
    process = multiprocessing.get_context("spawn").Process(
        target=serve_receiver, args=(port, keep_alive), name="bench-receiver", daemon=True
    )
    process.start()
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_answering(process, base_url)
        yield base_url
    finally:
        process.terminate()
        process.join(STOP_TIMEOUT_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()


def wait_until_answering(process: multiprocessing.process.BaseProcess, base_url: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline and process.is_alive():
        try:
            receiver_stats(base_url)
            return
        except requests.RequestException:
            time.sleep(0.05)
    raise BenchmarkError(f"The receiver did not answer (exit code {process.exitcode}).")


def receiver_stats(base_url: str) -> dict[str, int]:
    answer = requests.get(f"{base_url}/stats", timeout=REQUEST_TIMEOUT_SECONDS)
    answer.raise_for_status()
    return answer.json()


@contextmanager
def app_context(env: dict[str, str]) -> Iterator[None]:
    """The app configured from the run's environment (so its SECRET_KEY encrypts what the
    worker decrypts), in an app context; quiet below warnings."""
    sys.path.insert(0, str(REPO_ROOT))
    from app import create_app
    from app.extensions import db

    with mock.patch.dict(os.environ, env):
        app = create_app({"LOG_LEVEL": "WARNING"})
    with app.app_context():
        try:
            yield
        finally:
            db.engine.dispose()


def seed_deliveries(
    account_id: str, receiver_url: str, endpoints: int, events: int
) -> tuple[bytes, dict[str, str]]:
    """`endpoints` endpoints at the receiver (`<url>/<n>`), `events` events fanned out to
    them (PENDING deliveries, and the engine runs the relay asked for in the queue); returns
    a sample delivery's body and headers. Needs `app_context`."""
    from app.extensions import db
    from app.models import KeyMode
    from app.services.webhooks import endpoints as webhook_endpoints

    for number in range(endpoints):
        url = f"{receiver_url}/{number}"
        webhook_endpoints.create_endpoint(account_id, KeyMode.TEST, url, [EVENT_TYPE])
    db.session.commit()
    record_events(account_id, events)
    relay(events)
    return sample_request()


def record_events(account_id: str, total: int) -> None:
    """`total` events in the outbox, committed in batches like charges being created."""
    from app.extensions import db
    from app.models import KeyMode
    from app.services.events import record_event

    for start in range(0, total, EVENT_BATCH):
        for index in range(start, min(start + EVENT_BATCH, total)):
            charge = {"id": f"bench_{index}", "amount": 1000 + index, "status": "pending"}
            record_event(
                account_id,
                KeyMode.TEST,
                EVENT_TYPE,
                {"object": charge},
                subject_type="transaction",
                subject_id=str(index),
            )
        db.session.commit()


def relay(total: int) -> None:
    """Fan the events out with the app's relay, here and now rather than in the worker. The
    event commits enqueued relay jobs: drop them first, so the queue ends up holding only the
    delivery engine runs the relay's commits ask for (one per relay batch)."""
    from app.extensions import WEBHOOK_QUEUE, get_queue
    from app.jobs.webhooks import relay_events
    from app.services.webhooks.relay import ENGINE_JOB

    queue = get_queue(WEBHOOK_QUEUE)
    queue.empty()
    relayed = relay_events()
    jobs = queue.get_jobs()
    functions = {job.func_name for job in jobs}
    if relayed != total or not jobs or functions != {ENGINE_JOB}:
        raise BenchmarkError(
            f"Expected {total} events relayed and engine runs queued; relayed {relayed}, "
            f"queued {len(jobs)} jobs of {sorted(functions)}."
        )


def sample_request() -> tuple[bytes, dict[str, str]]:
    """A delivery's body and headers as the service builds them, signed once with a throwaway
    secret (the baseline sends these, with its own X-Acme-Delivery-Id each)."""
    from app.extensions import db
    from app.formats.webhooks import body_bytes, signature
    from app.models import WebhookDelivery
    from app.services.webhooks.delivery import USER_AGENT

    delivery = db.session.scalars(sa.select(WebhookDelivery).limit(1)).one()
    body = body_bytes(delivery.payload)
    signed = signature(delivery.event_type, secrets.token_hex(32), body, int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Acme-Signature": signed,
        "X-Acme-Event-Type": delivery.event_type,
    }
    return body, headers


def delivery_counts(conn: psycopg.Connection) -> DeliveryCounts:
    return DeliveryCounts(*conn.execute(COUNTS_SQL).fetchone())


def run_worker(
    env: dict[str, str], database_url: str, warmup: int, total: int
) -> tuple[float, float]:
    """One `python worker.py` until all deliveries are DELIVERED; returns the seconds until the
    first `warmup` were (start-up included) and the seconds for the next `total`."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        started = time.perf_counter()
        with rq_worker(env) as worker:
            ready = wait_for_delivered(conn, warmup, worker)
            done = wait_for_delivered(conn, warmup + total, worker)
    return ready - started, done - ready


def wait_for_delivered(conn: psycopg.Connection, target: int, worker: WorkerProcess) -> float:
    """Poll until `target` deliveries are DELIVERED; the `perf_counter` time it was seen. Fails
    at once on an attempt that got no 2xx, a worker that exits, or no progress for a minute."""
    progress_at, last = time.perf_counter(), -1
    while True:
        counts = delivery_counts(conn)
        now = time.perf_counter()
        if counts.delivered >= target:
            return now
        if counts.failed_attempts:
            raise BenchmarkError(
                f"{counts.failed_attempts} delivery attempts failed, e.g.: {counts.an_error}"
            )
        worker.check()
        if counts.delivered != last:
            progress_at, last = now, counts.delivered
        elif now - progress_at > STALL_TIMEOUT_SECONDS:
            raise BenchmarkError(
                f"No delivery for {STALL_TIMEOUT_SECONDS} s ({last} of {target}):\n"
                f"{tail(worker.log)}"
            )
        time.sleep(POLL_SECONDS)


def worker_problems(counts: DeliveryCounts, stats: dict[str, int], expected: int) -> list[str]:
    """Each delivery DELIVERED in one attempt, and exactly one POST per delivery."""
    problems = []
    if counts.total != expected or counts.delivered != expected:
        problems.append(
            f"{counts.delivered} of {counts.total} deliveries DELIVERED, not {expected}"
        )
    if counts.retried:
        problems.append(f"{counts.retried} deliveries took more than one attempt")
    if stats["posts"] != expected:
        problems.append(f"the receiver got {stats['posts']} POSTs for {expected} deliveries")
    if stats["delivery_ids"] != stats["posts"]:
        duplicates = stats["posts"] - stats["delivery_ids"]
        problems.append(f"the receiver got {duplicates} duplicate deliveries")
    return problems


def run_baseline(
    url: str, body: bytes, headers: dict[str, str], warmup: int, total: int
) -> tuple[float, int]:
    """`warmup` then `total` POSTs in a plain loop through one session; returns the seconds of
    the counted ones and how many answers were not 200."""
    with requests.Session() as session:
        post_many(session, url, body, headers, warmup)
        started = time.perf_counter()
        errors = post_many(session, url, body, headers, total)
        return time.perf_counter() - started, errors


def post_many(
    session: requests.Session, url: str, body: bytes, headers: dict[str, str], count: int
) -> int:
    """POST `count` times; how many answers were not 200 (no answer at all stops the run)."""
    errors = 0
    for _ in range(count):
        try:
            answer = session.post(
                url,
                data=body,
                headers={**headers, "X-Acme-Delivery-Id": str(uuid.uuid4())},
                timeout=REQUEST_TIMEOUT_SECONDS,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise BenchmarkError(f"baseline POST failed: {type(exc).__name__}: {exc}") from exc
        errors += answer.status_code != 200
    return errors


def measure(
    env: dict[str, str],
    database_url: str,
    receiver_base: str,
    request: tuple[bytes, dict[str, str]],
    args: argparse.Namespace,
) -> Measurement:
    """The worker phase, then the baseline, with the checks of each."""
    total = args.warmup + args.deliveries
    start_up, worker_seconds = run_worker(env, database_url, args.warmup, args.deliveries)
    with psycopg.connect(database_url) as conn:
        counts = delivery_counts(conn)
    after_worker = receiver_stats(receiver_base)
    problems = worker_problems(counts, after_worker, total)
    url = receiver_base + RECEIVER_PATH
    baseline_seconds, errors = run_baseline(url, *request, args.warmup, args.deliveries)
    baseline_posts = receiver_stats(receiver_base)["posts"] - after_worker["posts"]
    if errors or baseline_posts != total:
        problems.append(f"baseline: {errors} answers not 200, {baseline_posts} POSTs received")
    return Measurement(
        worker=PhaseResult("worker", args.deliveries, worker_seconds),
        baseline=PhaseResult("baseline", args.deliveries, baseline_seconds),
        worker_start_up=start_up,
        receiver=after_worker,
        problems=problems,
    )


def parse_args() -> argparse.Namespace:
    parser = argument_parser(
        "Webhook deliveries per second by one RQ worker process (PostgreSQL, Redis) next to a "
        "plain loop of POSTs to the same local receiver."
    )
    parser.add_argument(
        "--deliveries", type=at_least(1), default=500, help="counted deliveries (default 500)"
    )
    parser.add_argument(
        "--warmup",
        type=at_least(0),
        default=20,
        help="uncounted deliveries (and POSTs) first; 0 times the worker's start-up too "
        "(default 20)",
    )
    parser.add_argument(
        "--endpoints",
        type=at_least(1),
        default=16,
        help="endpoints at the receiver, each event delivered to all of them; the counts are "
        "rounded up to whole events (default 16: one endpoint may have at most "
        "WEBHOOK_ENDPOINT_CONCURRENCY attempts under way)",
    )
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="the receiver keeps connections open (HTTP/1.1) for the engine and the loop alike "
        "(default: HTTP/1.0, one connection per POST)",
    )
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    args = parser.parse_args()
    args.warmup = -(-args.warmup // args.endpoints) * args.endpoints
    args.deliveries = -(-args.deliveries // args.endpoints) * args.endpoints
    return args


def configuration(args: argparse.Namespace, setup: Setup, receiver_url: str, body: bytes) -> dict:
    return {
        **machine_facts(),
        "deliveries": args.deliveries,
        "warmup": args.warmup,
        "event": EVENT_TYPE,
        "body_bytes": len(body),
        "worker": WORKER_PROCESS,
        "endpoints": args.endpoints,
        "receiver": receiver_url,
        "receiver_http": "HTTP/1.1 keep-alive" if args.keep_alive else "HTTP/1.0",
        **setup.facts(),
    }


def report(config: dict, measurement: Measurement) -> str:
    m = measurement
    lines = [
        *heading("Acme Pay benchmark: webhook deliveries by one worker process", config),
        f"{'phase':<10}{'count':>7}{'seconds':>9}{'per second':>12}",
    ]
    for result in (m.worker, m.baseline):
        lines.append(
            f"{result.name:<10}{result.count:>7}{result.seconds:>9.2f}{result.per_second:>12.1f}"
        )
    lines += [
        "",
        f"worker / baseline: {m.ratio:.3f}x (one delivery takes as long as "
        f"{1 / m.ratio:.1f} plain POSTs)",
        f"worker start-up and {config['warmup']} warm-up deliveries: {m.worker_start_up:.2f} s "
        "(not counted)",
        f"receiver: {m.receiver['posts']} delivery POSTs, {m.receiver['delivery_ids']} distinct "
        "delivery ids",
    ]
    return "\n".join(lines)


def as_json(config: dict, measurement: Measurement) -> str:
    m = measurement
    return json.dumps(
        {
            "config": config,
            "phases": {r.name: r.figures() for r in (m.worker, m.baseline)},
            "ratio_worker_baseline": round(m.ratio, 4),
            "worker_start_up_s": round(m.worker_start_up, 3),
            "receiver": m.receiver,
            "problems": m.problems,
        }
    )


def benchmark(args: argparse.Namespace) -> None:
    with ExitStack() as stack:
        setup = stack.enter_context(migrated_setup(base_environment))
        account_id, _ = create_test_account(setup.env)
        receiver_base = stack.enter_context(receiver(free_port(), args.keep_alive))
        receiver_url = receiver_base + RECEIVER_PATH
        with app_context(setup.env):
            events = (args.warmup + args.deliveries) // args.endpoints
            body, headers = seed_deliveries(account_id, receiver_url, args.endpoints, events)
        config = configuration(args, setup, receiver_url, body)
        measurement = measure(setup.env, setup.database_url, receiver_base, (body, headers), args)
    print(report(config, measurement))
    if args.json:
        print(as_json(config, measurement))
    if measurement.problems:
        raise BenchmarkError("\n".join(measurement.problems))


def main() -> int:
    return run(benchmark, parse_args())


if __name__ == "__main__":
    sys.exit(main())
