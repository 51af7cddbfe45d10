"""The README's run command: the whole service on embedded defaults, as a newcomer starts it."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from redis import Redis
from rq import Queue
from rq.cron import CronScheduler

from tests.support.processes import answers_ok, free_port, wait_for, wait_or_kill
from tests.support.receiver import receiving

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stack(tmp_path):
    port, redis_port, receiver_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        INSTANCE_PATH=str(tmp_path / "instance"),
        PORT=str(port),
        EMBEDDED_REDIS_PORT=str(redis_port),
        DEV_RECEIVER_PORT=str(receiver_port),
        WEB_CONCURRENCY="1",
        # The shortest sweeps the deployed stack runs (tests/support/deployed.py): jobs every
        # second, so the console is tested against a busy minute.
        SETTLEMENT_RELEASE_SWEEP_SECONDS="1",
        WEBHOOK_SWEEP_SECONDS="1",
        REFUND_POLL_SECONDS="1",
    )
    log = (tmp_path / "stack.log").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.devstack"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so teardown can stop every child
    )

    def output() -> str:
        log.flush()
        return (tmp_path / "stack.log").read_text()

    try:
        wait_for(
            lambda: "Acme Pay is running" in output() or process.poll() is not None, 90, "the stack"
        )
        assert process.poll() is None, output()
        base = f"http://127.0.0.1:{port}"
        # gunicorn loads the app after the banner: about a minute on a loaded 2-core machine.
        wait_for(lambda: answers_ok(f"{base}/healthz"), 120, "the web process")
        yield {
            "base": base,
            "output": output(),
            "read_output": output,
            "redis": f"redis://127.0.0.1:{redis_port}/0",
            "process": process,
            "logs": tmp_path / "instance" / "logs",
        }
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        wait_or_kill(process, timeout=30)
        log.close()


@pytest.mark.slow
def test_run_command_serves_web_worker_and_cron_on_embedded_defaults(stack, tmp_path):
    out = stack["output"]
    test_key = re.search(r"Test API key: (ak_test_\S+)", out).group(1)
    email, password = re.search(r"Owner login:\s+(\S+) / (\S+)", out).groups()
    assert f"Dashboard:    {stack['base']}/dashboard/" in out
    assert (tmp_path / "instance" / "acme.db").exists()

    ready = requests.get(f"{stack['base']}/readyz", timeout=5)
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "ok", "evidence_storage": "ok"},
    }
    login = requests.post(
        f"{stack['base']}/v1/auth/login", json={"email": email, "password": password}, timeout=5
    )
    assert login.status_code == 200
    keys = requests.get(
        f"{stack['base']}/v1/api-keys",
        headers={"Authorization": f"Bearer {login.json()['token']}"},
        timeout=5,
    ).json()["data"]
    assert test_key[:12] in {k["prefix"] for k in keys}
    login_page = f"{stack['base']}/dashboard/login"
    assert "Entrar" in requests.get(login_page, timeout=5).text  # no language asked: pt_BR
    english = requests.get(login_page, headers={"Accept-Language": "en"}, timeout=5)
    assert "Sign in" in english.text

    _charge_is_created_checked_out_and_paid(stack["base"], test_key)
    _the_printed_receiver_prints_deliveries(stack, test_key)
    _payment_is_finalised_by_the_worker(stack["base"], test_key)

    redis = Redis.from_url(stack["redis"])
    job = Queue("default", connection=redis).enqueue("app.jobs.maintenance.prune_revoked_tokens")
    wait_for(lambda: job.get_status(refresh=True) == "finished", 30, "the worker to run a job")
    wait_for(lambda: CronScheduler.all(redis), 30, "rq cron to register")
    _the_console_keeps_the_banner_while_the_logs_keep_the_jobs(stack)

    stack["process"].send_signal(signal.SIGINT)
    assert stack["process"].wait(timeout=30) == 0
    assert not answers_ok(f"{stack['base']}/healthz")


def _the_console_keeps_the_banner_while_the_logs_keep_the_jobs(stack) -> None:
    """Periodic jobs and requests log a line each to the processes' files under
    `<INSTANCE_PATH>/logs/`, where the banner and the README say; the console keeps the
    banner in view: beyond it, only the receiver's deliveries and warnings or errors."""
    logs = stack["logs"]
    banner_end = f"Logs:         {logs}/<process>.log"
    assert banner_end in stack["output"]
    assert "`instance/logs/<process>.log`" in (ROOT / "README.md").read_text()

    def finished_jobs() -> int:
        return sum(
            (logs / f"{name}.log").read_text().count("Successfully completed app.jobs.")
            for name in ("worker", "webhooks")
        )

    wait_for(lambda: finished_jobs() >= 60, 180, "60 jobs to have run")
    cron_log = (logs / "cron.log").read_text()
    assert cron_log.count("Enqueued job release_settlements to queue money") >= 10
    assert '"path": "/v1/payments' in (logs / "web.log").read_text()  # a request's line
    beyond_banner = stack["read_output"]().partition(banner_end)[2].splitlines()[1:]
    assert len(beyond_banner) < 30, "\n".join(beyond_banner)
    assert not [line for line in beyond_banner if "Job OK" in line or '"INFO"' in line]


def _the_printed_receiver_prints_deliveries(stack, test_key: str) -> None:
    """The receiver the run command prints, added as an endpoint, gets the signed deliveries
    and prints one line each."""
    receiver_url = re.search(r"Webhook receiver for trying endpoints: (\S+)", stack["output"])[1]
    headers = {"apikey": test_key}
    endpoint = requests.post(
        f"{stack['base']}/v1/webhooks/endpoints",
        json={"url": receiver_url, "events": ["charge.created"]},
        headers=headers,
        timeout=10,
    )
    assert endpoint.status_code == 201, endpoint.text
    charge = requests.post(
        f"{stack['base']}/v1/charges",
        json={"amount": 1000, "payment_method": "pix"},
        headers={**headers, "Idempotency-Key": "e2e-charge-receiver"},
        timeout=10,
    ).json()
    printed = "[receiver] POST /hooks charge.created evt_"
    line = wait_for(
        lambda: next(
            (x for x in stack["read_output"]().splitlines() if x.startswith(printed)), None
        ),
        30,
        "the printed receiver to get the delivery",
    )
    assert f" for {charge['id']} (X-Acme-Signature: t=" in line


def _payment_is_finalised_by_the_worker(base: str, test_key: str) -> None:
    """A boleto payment answers PENDING at once; the worker process finalises it with the
    sandbox provider, and its printable slip is served at boletoPdfUrl."""
    headers = {"apikey": test_key}
    created = requests.post(
        f"{base}/v1/payments",
        json={"amount": 4990, "paymentMethods": ["BOLETO"], "idempotencyKey": "e2e-payment-1"},
        headers=headers,
        timeout=10,
    ).json()
    assert created["status"] == "PENDING", created

    def finalised():
        payment = requests.get(f"{base}/v1/payments/{created['id']}", headers=headers, timeout=5)
        return payment.json() if payment.json()["status"] == "WAITING_PAYMENT" else None

    payment = wait_for(finalised, 30, "the worker to finalise the payment")
    assert len(payment["boletoLine"]) == 47
    slip = requests.get(payment["boletoPdfUrl"], timeout=10)
    assert slip.headers["Content-Type"] == "application/pdf" and slip.content.startswith(b"%PDF")


def _charge_is_created_checked_out_and_paid(base: str, test_key: str) -> None:
    """The demo test key creates a Pix charge; its checkout page, QR and payment all work,
    and the worker process delivers the signed webhooks to a receiver."""
    headers = {"apikey": test_key}
    with receiving() as receiver:
        endpoint = requests.post(
            f"{base}/v1/webhooks/endpoints",
            json={"url": receiver.url, "events": ["charge.created", "charge.paid"]},
            headers=headers,
            timeout=10,
        ).json()
        assert endpoint["status"] == "ACTIVE", endpoint
        charge = requests.post(
            f"{base}/v1/charges",
            json={"amount": 2590, "payment_method": "pix", "description": "E2E"},
            headers={**headers, "Idempotency-Key": "e2e-charge-0001"},
            timeout=10,
        ).json()
        assert charge["status"] == "pending", charge
        assert charge["checkout_url"].startswith(base)
        page = requests.get(charge["checkout_url"], timeout=10)
        assert page.status_code == 200 and "R$\u00a025,90" in page.text
        assert requests.get(charge["pix"]["qr_code_url"], timeout=10).status_code == 200
        paid = requests.post(
            f"{base}/v1/sandbox/charges/{charge['id']}/pay", json={}, headers=headers, timeout=10
        ).json()
        assert paid["status"] == "paid"
        status = requests.get(f"{charge['checkout_url']}/status", timeout=10).json()
        assert status["status"] == "paid"
        wait_for(lambda: len(receiver.received) >= 2, 30, "the worker to deliver the webhooks")
        types = sorted(r.headers["X-Acme-Event-Type"] for r in receiver.received)
        assert types == ["charge.created", "charge.paid"]
