"""A webhook receiver that takes the connection and never answers, or answers a byte at a
time: the attempt ends after WEBHOOK_TIMEOUT_SECONDS in all (headers trickled forever too),
is recorded as failed with its retry scheduled, and the worker goes on to the next job. An
answer whose body stalls or is cut short counts by its status, and fails no job."""

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import KeyMode, WebhookDelivery
from app.services.webhooks import transport
from app.services.webhooks.delivery import RETRY_DELAYS
from tests.support import charges, factories
from tests.support.processes import wait_for
from tests.support.slow_endpoint import read_request

pytestmark = pytest.mark.slow
TIMEOUT_SECONDS = 1


def _never_answers(connection: socket.socket, stop: threading.Event) -> None:
    stop.wait()


def _trickles(connection: socket.socket, stop: threading.Event) -> None:
    """A 503 whose long body comes a byte every 0.2 s, so no single read ever times out."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100000\r\n\r\n")
    while not stop.wait(0.2):
        connection.sendall(b".")


def _trickles_headers(connection: socket.socket, stop: threading.Event) -> None:
    """A status line, then header bytes one a second for ever: every read gets a byte long
    before a per-read timeout, so only a limit on the whole attempt ends it."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.wait(1):
        connection.sendall(b"X")


def _answers_once_then_trickles_headers(connection: socket.socket, stop: threading.Event) -> None:
    """A 200 the connection stays open after, then, to the next request on it, headers a
    byte a second for ever."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    _trickles_headers(connection, stop)


def _answers_then_stalls(connection: socket.socket, stop: threading.Event) -> None:
    """A 200 whose promised body never comes."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
    stop.wait()


def _cuts_its_body_short(connection: socket.socket, stop: threading.Event) -> None:
    """A 200 that closes the connection two bytes into a ten-byte body."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok")


@contextlib.contextmanager
def stalling_endpoint(behaviour: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """An HTTP address whose every connection is handed to `behaviour` until the end."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)

    def serve(connection: socket.socket) -> None:
        with contextlib.suppress(OSError), connection:
            behaviour(connection, stop)

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):  # the poll's timeout, or closed at the end
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hooks"
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize(
    "behaviour",
    [
        _never_answers,
        _trickles,
    ],
    ids=["silent", "trickling"],
)
def test_a_stalling_receiver_costs_one_timeout_then_the_worker_moves_on(
    app, client, app_redis, receiver, workers, behaviour
):
    account_id = factories.make_account(app)
    api_key = factories.make_api_key(app, account_id)
    with stalling_endpoint(behaviour) as stalling_url:
        endpoints = []
        for url in (stalling_url, receiver.url):  # the stalling endpoint's job comes first
            response = client.post(
                "/v1/webhooks/endpoints",
                json={"url": url, "events": ["charge.created"]},
                headers={"apikey": api_key},
            )
            assert response.status_code == 201, response.get_json()
            endpoints.append(response.get_json()["id"])
        charges.created(client, api_key)
        workers.start(WEBHOOK_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS))
        wait_for(
            lambda: [d.status for d in _deliveries(app, endpoints)] == ["PENDING", "DELIVERED"],
            15,
            "the stalled attempt to be recorded, then the next delivery",
        )
        stalled, healthy = _deliveries(app, endpoints)

    assert healthy.status == "DELIVERED"
    assert (stalled.status, stalled.attempts, stalled.lease_expires_at) == ("PENDING", 1, None)
    assert stalled.last_error in {
        f"Timed out: the endpoint took longer than {TIMEOUT_SECONDS} s in all.",
        "The endpoint answered HTTP 503.",
    }
    attempt_took = stalled.updated_at - stalled.last_attempt_at
    assert attempt_took <= timedelta(seconds=2 * TIMEOUT_SECONDS + 1)
    assert stalled.next_retry_at - stalled.updated_at >= timedelta(seconds=RETRY_DELAYS[0] * 0.9)
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 0  # its retry is not due yet


@pytest.mark.parametrize(
    "behaviour", [_answers_then_stalls, _cuts_its_body_short], ids=["stalled", "cut-short"]
)
def test_an_answer_whose_body_fails_still_counts_by_its_status(
    app, client, app_redis, receiver, workers, behaviour
):
    """The receiver said 200: the delivery is done (sending it again would duplicate the
    event), whatever became of the body, and the job does not fail."""
    account_id = factories.make_account(app)
    api_key = factories.make_api_key(app, account_id)
    with stalling_endpoint(behaviour) as stalling_url:
        response = client.post(
            "/v1/webhooks/endpoints",
            json={"url": stalling_url, "events": ["charge.created"]},
            headers={"apikey": api_key},
        )
        assert response.status_code == 201, response.get_json()
        endpoint_id = response.get_json()["id"]
        charges.created(client, api_key)
        workers.start(WEBHOOK_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS))
        wait_for(
            lambda: [d.status for d in _deliveries(app, [endpoint_id])] == ["DELIVERED"],
            15,
            "the answer to be recorded",
        )
    (delivered,) = _deliveries(app, [endpoint_id])
    assert (delivered.attempts, delivered.last_status_code) == (1, 200)


def _deliveries(app, endpoint_ids: list[str]) -> list[WebhookDelivery]:
    """The delivery to each endpoint, in their order."""
    with app.app_context():
        rows = db.session.scalars(sa.select(WebhookDelivery)).all()
        return sorted(rows, key=lambda row: endpoint_ids.index(row.endpoint_id))


@pytest.mark.parametrize(
    ("behaviour", "earlier_answers"),
    [(_trickles_headers, 0), (_answers_once_then_trickles_headers, 1)],
    ids=["new-connection", "kept-connection"],
)
def test_headers_trickled_for_ever_end_the_attempt_at_the_timeout(
    app, monkeypatch, behaviour, earlier_answers
):
    """The limit covers the whole attempt, not each read: the attempt is over after
    WEBHOOK_TIMEOUT_SECONDS, recorded as timed out, however the endpoint drips; also on a
    connection an earlier attempt kept alive."""
    timeout = 2
    monkeypatch.setitem(app.config, "WEBHOOK_TIMEOUT_SECONDS", timeout)
    attempts = []
    with stalling_endpoint(behaviour) as url, transport.KeptConnections(1) as kept:
        outgoing = transport.Outgoing(url, KeyMode.TEST, True, b"{}", {})

        def send() -> None:
            with app.app_context():
                for _ in range(earlier_answers):
                    assert transport.send(outgoing, kept).status_code == 200
                started = time.monotonic()
                attempts.append((transport.send(outgoing, kept), time.monotonic() - started))

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(timeout + 5)  # without the limit it would wait until the endpoint stops
    sender.join(5)
    ((attempt, took),) = attempts
    assert took <= timeout + 1, took
    assert attempt == transport.Attempt(
        None, None, f"Timed out: the endpoint took longer than {timeout} s in all."
    )
