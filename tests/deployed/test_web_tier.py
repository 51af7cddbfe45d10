"""The web tier against slow and oversized requests (issue 19): straight to gunicorn, one
worker of 8 threads (the deployed stack's web process), so eight clients that each held a thread
while trickling a body would be enough to stop it; then through deploy/nginx/acme.conf on
loopback ports, when nginx is installed."""

import select
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from app.errors import ErrorSchema
from tests.support.nginx import needs_nginx, nginx_command, render_site, running_nginx
from tests.support.processes import free_port

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 50
DECLARED_BODY_BYTES = 100_000
WATCH_SECONDS = 12
TRICKLE_EVERY_SECONDS = 1
HEALTHZ_BOUND_SECONDS = 2
TEN_KB = "a" * 10_000
WRONG_LOGIN = b'{"email": "nobody@example.com", "password": "wrong password"}'
UNAUTHORIZED = b"HTTP/1.1 401 UNAUTHORIZED"


def _address(deployed) -> tuple[str, int]:
    base = urlsplit(deployed.base)
    return base.hostname, base.port


def _open_slow_body(address: tuple[str, int], path: str) -> socket.socket:
    """A POST whose headers arrive at once and whose body never finishes arriving."""
    sock = socket.create_connection(address, timeout=HEALTHZ_BOUND_SECONDS)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: {address[0]}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {DECLARED_BODY_BYTES}\r\n\r\n{{".encode()
    )
    return sock


def test_fifty_slow_bodies_do_not_stop_healthz(deployed):
    address = _address(deployed)
    slow_clients: list[socket.socket] = []
    slowest_healthz = 0.0
    try:
        for number in range(SLOW_CLIENTS):
            path = "/v1/auth/login" if number % 2 else "/v1/charges"
            slow_clients.append(_open_slow_body(address, path))
        watch_until = time.monotonic() + WATCH_SECONDS
        while time.monotonic() < watch_until:
            round_started = time.monotonic()
            for sock in slow_clients:
                sock.sendall(b" ")
            answer = requests.get(deployed.base + "/healthz", timeout=HEALTHZ_BOUND_SECONDS)
            slowest_healthz = max(slowest_healthz, time.monotonic() - round_started)
            assert answer.status_code == 200, answer.text
            time.sleep(max(TRICKLE_EVERY_SECONDS - (time.monotonic() - round_started), 0))
        answered, _, _ = select.select(slow_clients, [], [], 0)
        assert not answered, "the server answered or closed slow clients still sending"
    finally:
        for sock in slow_clients:
            sock.close()
    assert slowest_healthz < HEALTHZ_BOUND_SECONDS
    assert deployed.request("GET", "/healthz").status_code == 200


def _assert_envelope(answer: requests.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    envelope = answer.json()
    assert ErrorSchema().validate(envelope) == {}
    assert envelope["error"]["type"] == "invalid_request_error"
    assert envelope["error"]["code"] == code
    assert envelope["request_id"] == answer.headers["X-Request-Id"]


def test_a_10_kb_path_is_refused_in_the_envelope(deployed):
    answer = deployed.request("GET", f"/v1/charges/{TEN_KB}")

    _assert_envelope(answer, 414, "request_line_too_long")


def test_a_10_kb_header_is_refused_in_the_envelope(deployed):
    answer = deployed.request("GET", "/healthz", headers={"X-Padding": TEN_KB})

    _assert_envelope(answer, 431, "header_too_large")


def _login_head(*extra_headers: bytes) -> bytes:
    return (
        b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n"
        % len(WRONG_LOGIN)
        + b"".join(extra_headers)
        + b"\r\n"
    )


def _status_line(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer.partition(b"\r\n")[0]


def test_a_body_sent_in_pieces_is_served_whole(deployed):
    """The event loop collects a body that arrives in pieces, then the application gets it."""
    with socket.create_connection(_address(deployed), timeout=10) as sock:
        sock.sendall(_login_head())
        for piece in (WRONG_LOGIN[:10], WRONG_LOGIN[10:30], WRONG_LOGIN[30:]):
            time.sleep(0.3)
            sock.sendall(piece)

        assert _status_line(sock) == UNAUTHORIZED


def test_a_client_expecting_100_continue_gets_it_before_sending_the_body(deployed):
    with socket.create_connection(_address(deployed), timeout=10) as sock:
        sock.sendall(_login_head(b"Expect: 100-continue\r\n"))
        assert sock.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(WRONG_LOGIN)

        assert _status_line(sock) == UNAUTHORIZED


def _nginx_config(directory: Path, https_port: int, upstream_port: int) -> Path:
    """deploy/nginx/acme.conf in front of `upstream_port` with a self-signed certificate, the
    one its clients trust."""
    certificate, key = directory / "certificate.pem", directory / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(certificate)),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return render_site(
        directory,
        https_port=https_port,
        http_port=free_port(),
        upstream_port=upstream_port,
        certificate=certificate,
        key=key,
        # Any CA will do: tests/deployed/test_nginx_psp_mtls.py tests the PSP webhook's mutual TLS.
        client_ca=certificate,
    )


@needs_nginx("openssl")
def test_the_nginx_config_is_valid(tmp_path):
    config = _nginx_config(tmp_path, free_port(), free_port())

    checked = subprocess.run(
        nginx_command(config, "-t"), capture_output=True, text=True, timeout=30
    )

    assert checked.returncode == 0, checked.stderr


@pytest.fixture
def nginx_in_front(deployed, tmp_path):
    """nginx with deploy/nginx/acme.conf in front of the deployed web: its https address and
    the certificate to trust."""
    https_port = free_port()
    config = _nginx_config(tmp_path, https_port, urlsplit(deployed.base).port)
    with running_nginx(config, https_port):
        yield f"https://127.0.0.1:{https_port}", str(tmp_path / "certificate.pem")


@needs_nginx("openssl")
def test_nginx_answers_its_own_limits_in_the_envelope(deployed, nginx_in_front):
    base, certificate = nginx_in_front
    web_log_before = len(deployed.log())

    def get(path: str, **kwargs) -> requests.Response:
        return requests.get(base + path, verify=certificate, timeout=10, **kwargs)

    long_path = get(f"/v1/charges/{TEN_KB}")
    long_header = get("/healthz", headers={"X-Padding": TEN_KB})
    too_large = requests.post(
        base + "/v1/charges", data=b"x" * (2 * 1024 * 1024), verify=certificate, timeout=10
    )

    assert get("/healthz").json() == {"status": "ok"}  # gunicorn's answer, through nginx
    _assert_envelope(long_path, 414, "request_line_too_long")
    _assert_envelope(long_header, 431, "header_too_large")
    _assert_envelope(too_large, 413, "payload_too_large")
    web_log = deployed.log()[web_log_before:]
    assert "/v1/charges" not in web_log and "Invalid request" not in web_log  # nginx's answers
