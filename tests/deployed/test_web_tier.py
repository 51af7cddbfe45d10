"""The web tier against slow and oversized requests (issue 19): straight to gunicorn, one
worker of 8 threads (the deployed stack's web process), so eight clients that each held a thread
while trickling a body would be enough to stop it; then through deploy/nginx/acme.conf on
loopback ports, when nginx is installed."""

import os
import pwd
import select
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from app.config import PROJECT_ROOT
from app.errors import ErrorSchema
from tests.support.processes import free_port, wait_for, wait_or_kill

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 50
DECLARED_BODY_BYTES = 100_000
WATCH_SECONDS = 12
TRICKLE_EVERY_SECONDS = 1
HEALTHZ_BOUND_SECONDS = 2
TEN_KB = "a" * 10_000
WRONG_LOGIN = b'{"email": "nobody@example.com", "password": "wrong password"}'
UNAUTHORIZED = b"HTTP/1.1 401 UNAUTHORIZED"
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
OPENSSL = shutil.which("openssl")
NGINX_BOOT_SECONDS = 15
NGINX_STOP_SECONDS = 10
# nginx.conf around deploy/nginx/acme.conf: in the foreground, every file in the test's
# directory, as the user running the tests (a worker as `nobody` could not read them).
NGINX_MAIN_CONFIG = """
daemon off;
user {user};
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {directory}/acme.conf;
}}
"""
needs_nginx = pytest.mark.skipif(
    not (NGINX and OPENSSL), reason="nginx and openssl are not installed"
)


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


def _nginx_config(directory: Path, https_port: int, http_port: int, upstream_port: int) -> Path:
    """deploy/nginx/acme.conf on loopback ports in front of `upstream_port`, with a
    self-signed certificate; everything else as shipped."""
    certificate, key = directory / "certificate.pem", directory / "key.pem"
    subprocess.run(
        [
            *(OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(certificate)),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    site = PROJECT_ROOT.joinpath("deploy", "nginx", "acme.conf").read_text()
    for shipped, here in {
        "listen 443 ssl;": f"listen 127.0.0.1:{https_port} ssl;",
        "listen [::]:443 ssl;": "",
        "listen 80;": f"listen 127.0.0.1:{http_port};",
        "listen [::]:80;": "",
        "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream_port};",
        "/etc/acme/tls/fullchain.pem": str(certificate),
        "/etc/acme/tls/privkey.pem": str(key),
    }.items():
        assert site.count(shipped) == 1, f"{shipped!r} is no longer in acme.conf once"
        site = site.replace(shipped, here)
    directory.joinpath("acme.conf").write_text(site)
    main = directory / "nginx.conf"
    user = pwd.getpwuid(os.geteuid()).pw_name
    main.write_text(NGINX_MAIN_CONFIG.format(user=user, directory=directory))
    return main


def _nginx_command(config: Path, *arguments: str) -> list[str]:
    return [NGINX, "-c", str(config), "-p", str(config.parent), "-e", "stderr", *arguments]


@needs_nginx
def test_the_nginx_config_is_valid(tmp_path):
    config = _nginx_config(tmp_path, free_port(), free_port(), free_port())

    checked = subprocess.run(
        _nginx_command(config, "-t"), capture_output=True, text=True, timeout=30
    )

    assert checked.returncode == 0, checked.stderr


@pytest.fixture
def nginx_in_front(deployed, tmp_path):
    """nginx with deploy/nginx/acme.conf in front of the deployed web: its https address and
    the certificate to trust. Stopped at the end, whatever happened."""
    https_port = free_port()
    config = _nginx_config(tmp_path, https_port, free_port(), urlsplit(deployed.base).port)
    base, certificate = f"https://127.0.0.1:{https_port}", str(tmp_path / "certificate.pem")
    with (tmp_path / "nginx.log").open("wb") as log:
        process = subprocess.Popen(
            _nginx_command(config),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: process.poll() is not None or _answers(base + "/healthz", certificate),
            NGINX_BOOT_SECONDS,
            "nginx in front of the deployed web",
        )
        assert process.poll() is None, (tmp_path / "nginx.log").read_text()
        yield base, certificate
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        wait_or_kill(process, timeout=NGINX_STOP_SECONDS)


def _answers(url: str, certificate: str) -> bool:
    try:
        return requests.get(url, verify=certificate, timeout=2).status_code == 200
    except requests.RequestException:
        return False


@needs_nginx
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
