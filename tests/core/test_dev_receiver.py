"""The receiver `./scripts/run` starts (`python -m app.dev_receiver`) prints one line per
delivery it gets. Legacy `payment.*` and `withdrawal.*` events are Acme Pay's too, in the
older `{event, data}` envelope without an event id: they were printed "(not an Acme Pay
event)" (issue 21); now their type, the delivery id, the object's id and its status. Only a
body that is neither family keeps that label.

Real deliveries: the process itself, endpoints registered through the API, events from a
charge and a payout, sent by a real RQ worker."""

import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from rq import SimpleWorker

from app.config import PROJECT_ROOT
from app.extensions import QUEUE_NAMES, get_queue
from tests.support.charges import created, pay
from tests.support.payouts import funded_merchant, pix_payout
from tests.support.processes import free_port, kill_group, wait_for

LINE_SECONDS = 10


@dataclass
class DevReceiver:
    url: str
    lines: queue.Queue

    def printed(self, count: int) -> list[str]:
        """The next `count` lines it prints."""
        return [self.lines.get(timeout=LINE_SECONDS).rstrip("\n") for _ in range(count)]


@pytest.fixture
def dev_receiver() -> Iterator[DevReceiver]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.dev_receiver", "--port", str(port)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in process.stdout], daemon=True
    ).start()
    receiver = DevReceiver(f"http://127.0.0.1:{port}/hooks", lines)
    try:
        wait_for(lambda: _answers(receiver.url), 15, "the dev receiver to listen")
        receiver.printed(1)  # its line for the POST that found it listening
        yield receiver
    finally:
        kill_group(process)


def _answers(url: str) -> bool:
    try:
        return requests.post(url, data=b"", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def _run_worker(app, redis) -> None:
    with app.app_context():
        SimpleWorker([get_queue(name) for name in QUEUE_NAMES], connection=redis).work(burst=True)


def test_legacy_and_canonical_deliveries_are_printed_as_acme_pay_events(
    app, client, redis, monkeypatch, dev_receiver
):
    merchant = funded_merchant(app, client, monkeypatch)
    _run_worker(app, redis)  # the funding charge's events, before any endpoint
    events = ["charge.created", "payment.created", "payment.completed", "withdrawal.created"]
    endpoint = client.post(
        "/v1/webhooks/endpoints",
        json={"url": dev_receiver.url, "events": events},
        headers={"apikey": merchant.api_key},
    )
    assert endpoint.status_code == 201, endpoint.get_json()

    charge = created(client, merchant.api_key, amount=2500)
    pay(client, merchant.api_key, charge["id"])
    payout = client.post("/v1/withdrawals", json=pix_payout(), headers=merchant.headers)
    assert payout.status_code == 201, payout.get_json()
    _run_worker(app, redis)

    printed = sorted(dev_receiver.printed(4))
    assert all("(not an Acme Pay event)" not in line for line in printed), printed
    canonical, completed, payment_created, withdrawal = printed
    assert canonical.startswith("[receiver] POST /hooks charge.created evt_")
    assert f" for {charge['id']} (X-Acme-Signature: t=" in canonical
    assert _legacy_line("payment.completed", charge["id"], "PAID").fullmatch(completed)
    assert _legacy_line("payment.created", charge["id"], "WAITING_PAYMENT").fullmatch(
        payment_created
    )
    assert _legacy_line("withdrawal.created", payout.get_json()["id"], "PENDING").fullmatch(
        withdrawal
    )


def _legacy_line(event: str, subject: str, status: str) -> re.Pattern:
    """Type, delivery id (the legacy envelope has no event id), object id, status, and the
    legacy family's signature."""
    return re.compile(
        rf"\[receiver\] POST /hooks {re.escape(event)} \(legacy\) delivery [0-9a-f-]{{36}} "
        rf"for {re.escape(subject)}: {status} \(X-Acme-Signature: sha256=[0-9a-f]{{64}}\)"
    )


@pytest.mark.parametrize(
    ("body", "event_type"),
    [
        (b"not json", "?"),
        (b"[1, 2]", "?"),
        (b'{"event": "payment.exploded", "data": {"transactionId": "t1"}}', "payment.exploded"),
        (b'{"event": "payment.completed", "data": "PAID"}', "payment.completed"),
        (b'{"event": ["payment.completed"], "data": {}}', "?"),
        (b'{"id": "evt_1", "data": {"object": "ch_1"}}', "charge.paid"),
    ],
)
def test_a_body_of_neither_family_is_not_an_acme_pay_event(dev_receiver, body, event_type):
    headers = {"X-Acme-Event-Type": event_type} if event_type != "?" else {}
    assert requests.post(dev_receiver.url, data=body, headers=headers, timeout=5).ok
    assert dev_receiver.printed(1) == [
        f"[receiver] POST /hooks {event_type} (not an Acme Pay event) "
        "(X-Acme-Signature: no signature)"
    ]
