"""The service as the Procfile deploys it, booted once per session: the `release` line
migrates a database of the stack's own, `flask demo seed --json` seeds the demo merchant,
then `web` (gunicorn with deploy/gunicorn.conf.py, bound to loopback), `worker`, `webhooks`
and `cron` run exactly as the Procfile writes them, with a realistic public host name. Tests
talk to it over HTTP only, so bugs that only real processes show (how gunicorn frames bodies,
jobs crossing from web to worker, cron's sweeps) are caught here, not by the test client.

Its workers consume jobs, so the stack never shares the session's database or Redis DB
(other tests count queued jobs and empty tables after each test): on PostgreSQL it gets
`<session database>_deployed` on the same server, dropped at the end; on SQLite a file of its
own. With REDIS_URL set it takes the next DB number (the session's + 1, modulo 16: `.ci/run`'s
13 gives 14), emptied before and after; without, an embedded Redis of its own. Every process
runs in its own group and is stopped at the end of the session, whatever happened; their logs
go into the failure messages.

The fixture is registered for the whole suite by tests/conftest.py: tests/deployed talks to the
stack over HTTP, tests/browser drives its web process in Chromium (and makes its data through
an app bound to `database_url` and `redis_url`)."""

import contextlib
import json
import math
import os
import secrets
import shlex
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests
from psycopg import sql
from redis import Redis
from rq import Queue

from app.embedded_redis import EmbeddedRedis
from tests.faults.processes import ROOT, process_environment, start_procfile_command
from tests.support.charges import charge_body
from tests.support.fake_api_pix import FakeApiPix, start_fake_api_pix
from tests.support.http import READER_LANGUAGE, csrf_token
from tests.support.processes import answers_ok, free_port, procfile, wait_for, wait_or_kill

PUBLIC_BASE_URL = "https://pagamentos.minha-loja-de-exemplo.com.br"
LONG_RUNNING = ("web", "worker", "webhooks", "cron")
SEED_COMMAND = "flask --app wsgi demo seed --json"
REDIS_DATABASES = 16
COMMAND_SECONDS = 120
BOOT_SECONDS = 60
STOP_SECONDS = 15
REQUEST_SECONDS = 10
WEBHOOK_TIMEOUT_SECONDS = 10
RECONCILE_SECONDS = 2
UNREACHABLE_RATE_LIMIT = 1_000_000
T = TypeVar("T")


@dataclass(frozen=True)
class DeployedStack:
    """The running stack: `base` is the web process's loopback address (the public address
    it prints in links is PUBLIC_BASE_URL); `seed` is what `flask demo seed --json` printed."""

    base: str
    seed: dict
    log_paths: dict[str, Path]
    database_url: str
    redis_url: str
    settings: dict[str, str]

    def path(self, public_url: str) -> str:
        """The path and query of a link the service handed out on its public host."""
        assert public_url.startswith(PUBLIC_BASE_URL + "/"), public_url
        return public_url.removeprefix(PUBLIC_BASE_URL)

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        """As a browser whose reader reads English (`READER_LANGUAGE`) unless the request
        names its own Accept-Language."""
        headers = {"Accept-Language": READER_LANGUAGE, **kwargs.pop("headers", {})}
        return requests.request(
            method, self.base + path, headers=headers, timeout=REQUEST_SECONDS, **kwargs
        )

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        """A request with the demo merchant's test key, and a fresh Idempotency-Key on writes
        (financial writes need one)."""
        headers = {"apikey": self.seed["test_api_key"], **kwargs.pop("headers", {})}
        if method == "POST":
            headers.setdefault("Idempotency-Key", uuid.uuid4().hex)
        return self.request(method, path, headers=headers, **kwargs)

    def signed_in(self, email: str, password: str) -> requests.Session:
        """A browser's session signed in to the dashboard, as a person signs in (the login
        form with its CSRF token)."""
        browser = requests.Session()
        browser.headers["Accept-Language"] = READER_LANGUAGE
        login_page = browser.get(self.base + "/dashboard/login", timeout=REQUEST_SECONDS)
        answer = browser.post(
            self.base + "/dashboard/login",
            data={"email": email, "password": password, "csrf_token": csrf_token(login_page.text)},
            timeout=REQUEST_SECONDS,
        )
        assert answer.status_code == 200 and answer.url != login_page.url, answer.text
        return browser

    def log(self, process_type: str = "web") -> str:
        return self.log_paths[process_type].read_text(errors="replace")

    def logs(self) -> str:
        """Every process's log, for a failure message."""
        return "\n".join(f"--- {name} ---\n{self.log(name)}" for name in self.log_paths)

    def run(self, command: str) -> str:
        """A one-off command (a `flask` operator command) on the stack's database and Redis;
        its standard output."""
        env = process_environment(self.database_url, self.redis_url, **self.settings)
        return run_command(command, env)

    def reseed(self) -> None:
        """Seed the demo merchant again (after its tables were emptied): `seed` then holds the
        new keys."""
        self.seed.clear()
        self.seed.update(json.loads(self.run(SEED_COMMAND)))

    def new_merchant(self, name: str) -> tuple[str, str]:
        """A second merchant, made as an operator makes one (`flask accounts create`): its
        account id and test API key."""
        printed = self.run(f"flask --app wsgi accounts create {shlex.quote(name)} --test-key")
        made = dict(line.split("=", 1) for line in printed.split())
        return made["account_id"], made["test_api_key"]

    def queued(self, queue_name: str) -> int:
        """How many jobs wait on one of the stack's RQ queues."""
        with Redis.from_url(self.redis_url) as redis:
            return Queue(queue_name, connection=redis).count

    def wait_for(self, predicate: Callable[[], T], timeout: float, what: str) -> T:
        """`wait_for`, failing with every process's log: what the stack did meanwhile."""
        try:
            return wait_for(predicate, timeout, what)
        except AssertionError as failure:
            raise AssertionError(f"{failure}\n{self.logs()}") from None


def procfile_command(process_type: str) -> str:
    """The Procfile's command for `process_type`, bound to loopback instead of every
    interface."""
    return procfile()[process_type].replace("0.0.0.0:", "127.0.0.1:")


@contextlib.contextmanager
def stack_database(session_url: str, directory: Path) -> Iterator[str]:
    """A database for the stack alone, next to the session's."""
    if not session_url.startswith("postgresql"):
        yield f"sqlite:///{directory / 'deployed.db'}"
        return
    parts = urlsplit(session_url)
    name = f"{parts.path.lstrip('/')}_deployed"
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(session_url, autocommit=True) as admin:
        admin.execute(drop)  # left by a run that was killed
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(session_url, autocommit=True) as admin:
            admin.execute(drop)


@contextlib.contextmanager
def stack_redis(session_url: str | None) -> Iterator[str]:
    """A Redis DB for the stack alone: the next DB number of the session's REDIS_URL, emptied
    before and after, or an embedded server of its own when the session has none."""
    if not session_url:
        server = EmbeddedRedis().start()
        try:
            yield server.url
        finally:
            server.stop()
        return
    parts = urlsplit(session_url)
    number = (int(parts.path.lstrip("/") or 0) + 1) % REDIS_DATABASES
    url = urlunsplit(parts._replace(path=f"/{number}"))
    connection = Redis.from_url(url)
    connection.flushdb()
    try:
        yield url
    finally:
        connection.flushdb()
        connection.close()


def run_command(command: str, env: dict[str, str]) -> str:
    """A one-off command (release, seed) run to completion; its standard output."""
    finished = subprocess.run(
        ["/bin/sh", "-c", f"exec {command}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )
    assert finished.returncode == 0, f"{command} failed:\n{finished.stdout}\n{finished.stderr}"
    return finished.stdout


def stop(processes: list[subprocess.Popen]) -> None:
    """Ask every process to stop at once, then give each STOP_SECONDS before killing its
    group."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        wait_or_kill(process, timeout=STOP_SECONDS)


@pytest.fixture(scope="session")
def deployed_psp() -> Iterator[FakeApiPix]:
    """The live PSP of the stack's live mode: the fake API Pix over mutual TLS, so the
    processes speak to it as they would to a real one (client certificate, its CA)."""
    psp = start_fake_api_pix(tls=True)
    try:
        yield psp
    finally:
        psp.stop()


@pytest.fixture(scope="session")
def deployed(database_url, tmp_path_factory, deployed_psp) -> Iterator[DeployedStack]:
    """The Procfile's processes on a seeded database and a Redis DB of their own: one web
    worker (8 threads), two webhook workers that give one endpoint one attempt at a time,
    attempts cut at WEBHOOK_TIMEOUT_SECONDS, and sweeps every second so that releases and
    webhook retries happen within a test's wait. Live mode runs on `deployed_psp`, reconciled
    every RECONCILE_SECONDS."""
    directory = tmp_path_factory.mktemp("deployed")
    instance = directory / "instance"
    instance.mkdir()
    port = free_port()
    settings = {
        "PORT": str(port),
        "WEB_CONCURRENCY": "1",
        "WEBHOOK_PROCESSES": "2",
        "SECRET_KEY": secrets.token_hex(32),
        "PUBLIC_BASE_URL": PUBLIC_BASE_URL,
        "INSTANCE_PATH": str(instance),
        "SETTLEMENT_HOLD": "0s",
        "SETTLEMENT_RELEASE_SWEEP_SECONDS": "1",
        "WEBHOOK_SWEEP_SECONDS": "1",
        "WEBHOOK_TIMEOUT_SECONDS": str(WEBHOOK_TIMEOUT_SECONDS),
        "WEBHOOK_ENDPOINT_CONCURRENCY": "1",
        "REFUND_POLL_SECONDS": "1",
        "PAYMENT_TOTALS_FOLD_SECONDS": "1",
        **deployed_psp.config(),
        "API_PIX_RECONCILE_SECONDS": str(RECONCILE_SECONDS),
        # The live PSP's webhook answers only this secret (tests/deployed/test_nginx_psp_mtls.py).
        "API_PIX_WEBHOOK_SECRET": secrets.token_urlsafe(32),
        # The fuzzer (test_fuzz.py) sends thousands of requests a minute and fails logins by
        # the hundred from loopback: limits that would lock every later test out.
        "API_RATE_LIMIT_PER_MINUTE": str(UNREACHABLE_RATE_LIMIT),
        "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE": str(UNREACHABLE_RATE_LIMIT),
        "LOGIN_MAX_FAILURES_PER_IP": "0",
    }
    with (
        stack_database(database_url, directory) as stack_database_url,
        stack_redis(os.environ.get("REDIS_URL")) as stack_redis_url,
    ):
        env = process_environment(stack_database_url, stack_redis_url, **settings)
        run_command(procfile_command("release"), env)
        seed = json.loads(run_command(SEED_COMMAND, env))
        log_paths = {name: directory / f"{name}.log" for name in LONG_RUNNING}
        processes = []
        try:
            for name in LONG_RUNNING:
                processes.append(
                    start_procfile_command(
                        procfile_command(name),
                        stack_database_url,
                        stack_redis_url,
                        log_paths[name],
                        **settings,
                    )
                )
            stack = DeployedStack(
                f"http://127.0.0.1:{port}",
                seed,
                log_paths,
                stack_database_url,
                stack_redis_url,
                settings,
            )
            stack.wait_for(
                lambda: (
                    any(p.poll() is not None for p in processes)
                    or answers_ok(f"{stack.base}/healthz")
                ),
                BOOT_SECONDS,
                "the Procfile's web process",
            )
            assert all(p.poll() is None for p in processes), stack.logs()
            yield stack
        finally:
            stop(processes)


# The demo merchant's money, as the deployed tests read and move it.
RELEASE_SECONDS = 15


def created(response: requests.Response) -> dict:
    """The body of a 201."""
    assert response.status_code == 201, response.text
    return response.json()


def new_charge(deployed: DeployedStack, amount: int) -> dict:
    """A Pix charge of the demo merchant."""
    return created(deployed.api("POST", "/v1/charges", json=charge_body(amount=amount)))


def pay(deployed: DeployedStack, charge: dict) -> None:
    """The sandbox payer's bank pays the charge."""
    paid = deployed.api("POST", f"/v1/sandbox/charges/{charge['id']}/pay", json={})
    assert paid.status_code == 200, paid.text


def balance(deployed: DeployedStack) -> dict:
    """The demo merchant's wallet balance."""
    response = deployed.api("GET", "/v1/wallets/balance")
    assert response.status_code == 200, response.text
    return response.json()


def released(deployed: DeployedStack, total_above: float = -math.inf) -> dict | None:
    """The balance once nothing is pending and its total is above `total_above`."""
    balance_now = balance(deployed)
    return (
        balance_now if balance_now["pending"] == 0 and balance_now["total"] > total_above else None
    )
