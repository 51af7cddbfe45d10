"""Webhook deliveries reach only the address that was checked (issue 10): the host is
resolved once per attempt and the connection is pinned to that answer, so DNS rebinding
cannot turn a public name private between the check and the connection. Redirects are
not followed, the environment's proxies are ignored, and TLS still verifies the host name."""

import datetime
import http.server
import socket
import ssl
import threading

import pytest
import requests
import sqlalchemy as sa
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import DeliveryStatus, WebhookDelivery
from app.services.webhooks import addresses, transport
from tests.support import factories
from tests.support.charges import created
from tests.support.http import assert_error
from tests.support.receiver import receiving

HOST = "hooks.merchant.example"  # never resolvable for real: only the fake resolver knows it
PUBLIC_ADDRESS = "93.184.216.34"


class FakeResolver:
    """Answers each lookup of HOST with the next scripted list of addresses."""

    def __init__(self, *answers: list[str]):
        self.answers = list(answers)
        self.lookups = 0

    def __call__(self, host: str) -> list[str]:
        assert host == HOST
        self.lookups += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class ConnectionCounter:
    """A TCP port that counts the connections made to it and answers none of them."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def other_receiver():
    """A second receiver, which no request should reach."""
    with receiving() as server:
        yield server


@pytest.fixture
def unanswered_port():
    counter = ConnectionCounter()
    yield counter
    counter.close()


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


def _resolver(monkeypatch, *answers) -> FakeResolver:
    resolver = FakeResolver(*answers)
    monkeypatch.setattr(addresses, "resolve", resolver)
    return resolver


def _register(client, api_key, url):
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _one_attempt(app, client, api_key) -> WebhookDelivery:
    """Make a charge.created event, relay it and run its first attempt."""
    created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()
        delivery_id = db.session.scalar(sa.select(WebhookDelivery.id))
        webhook_jobs.deliver(delivery_id)
        return db.session.get(WebhookDelivery, delivery_id)


def test_a_name_that_turns_private_after_the_check_is_never_connected_to(
    app, client, api_key, unanswered_port, monkeypatch
):
    """DNS rebinding: public at registration, 127.0.0.1 at send time."""
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TEST_URLS", False)
    private = unanswered_port
    resolver = _resolver(monkeypatch, [PUBLIC_ADDRESS], ["127.0.0.1"])
    _register(client, api_key, f"http://{HOST}:{private.port}/hooks")

    delivery = _one_attempt(app, client, api_key)

    assert delivery.status is DeliveryStatus.PENDING
    assert delivery.last_error == f"The host {HOST} resolves to a private address (127.0.0.1)."
    assert (resolver.lookups, private.accepted) == (2, 0)


def test_one_private_address_among_public_ones_refuses_the_attempt(
    app, client, api_key, monkeypatch
):
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TEST_URLS", False)
    _resolver(monkeypatch, [PUBLIC_ADDRESS], [PUBLIC_ADDRESS, "169.254.169.254"])
    _register(client, api_key, f"https://{HOST}/hooks")

    delivery = _one_attempt(app, client, api_key)

    assert "private address (169.254.169.254)" in delivery.last_error


def test_the_connection_goes_to_the_resolved_address_with_the_endpoints_host_header(
    app, client, api_key, receiver, monkeypatch
):
    """The name resolves nowhere for real: the delivery arrives only because the request
    went to the address this attempt resolved, once."""
    port = receiver.server.server_address[1]
    resolver = _resolver(monkeypatch, ["127.0.0.1"])
    _register(client, api_key, f"http://{HOST}:{port}/hooks?source=acme")

    delivery = _one_attempt(app, client, api_key)

    assert delivery.status is DeliveryStatus.DELIVERED
    (request,) = receiver.received
    assert request.headers["Host"] == f"{HOST}:{port}"
    assert request.path == "/hooks?source=acme"
    assert resolver.lookups == 1  # registration of a test endpoint does not resolve here


def test_when_the_first_address_refuses_the_next_checked_one_is_tried(
    app, client, api_key, receiver, monkeypatch
):
    port = receiver.server.server_address[1]  # the receiver listens on 127.0.0.1 only
    _resolver(monkeypatch, ["127.0.0.2", "127.0.0.1"])
    _register(client, api_key, f"http://{HOST}:{port}/hooks")

    assert _one_attempt(app, client, api_key).status is DeliveryStatus.DELIVERED
    assert len(receiver.received) == 1


def test_redirects_are_not_followed(app, client, api_key, receiver, other_receiver):
    elsewhere = other_receiver
    receiver.reply(302, {"Location": elsewhere.url})
    _register(client, api_key, receiver.url)

    delivery = _one_attempt(app, client, api_key)

    assert (delivery.status, delivery.last_status_code) == (DeliveryStatus.PENDING, 302)
    assert len(receiver.received) == 1 and elsewhere.received == []


def test_proxies_from_the_environment_are_ignored(
    app, client, api_key, receiver, other_receiver, monkeypatch
):
    """A proxy would connect wherever the name resolves for it, past our check."""
    proxy = other_receiver
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.server.server_address[1]}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    _register(client, api_key, receiver.url)

    assert _one_attempt(app, client, api_key).status is DeliveryStatus.DELIVERED
    assert len(receiver.received) == 1 and proxy.received == []


def _certificate(tmp_path, name: str) -> tuple[str, str]:
    """A self-signed certificate for `name` (its own CA): (certificate file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server on 127.0.0.1 whose certificate names HOST; records SNI and Host."""
    seen = {}
    cert_file, key_file = _certificate(tmp_path, HOST)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen["host"] = self.headers["Host"]
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, name, ctx: seen.__setitem__("sni", name)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert_file, seen
    server.shutdown()
    server.server_close()


def test_a_pinned_https_connection_still_sends_sni_and_verifies_the_host_name(tls_server):
    port, ca_file, seen = tls_server
    with (
        transport.AttemptDeadline(5),
        transport.pinned_session(HOST) as session,
    ):
        session.verify = ca_file
        answer = session.post(
            f"https://127.0.0.1:{port}/hooks", headers={"Host": HOST}, data=b"{}", timeout=5
        )
    assert answer.status_code == 204
    assert seen == {"sni": HOST, "host": HOST}

    with (
        transport.AttemptDeadline(5),
        transport.pinned_session("impostor.example") as session,
    ):
        session.verify = ca_file
        with pytest.raises(requests.exceptions.SSLError):
            session.post(f"https://127.0.0.1:{port}/hooks", data=b"{}", timeout=5)


@pytest.mark.parametrize("port", ["0", "99999", "http", "-1"])
def test_a_url_with_an_invalid_port_is_refused_at_registration(client, api_key, port):
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": f"https://{HOST}:{port}/hooks", "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")
