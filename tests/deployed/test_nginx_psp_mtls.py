"""The live PSP's webhook behind deploy/nginx/acme.conf (issue 23): a real nginx, on loopback
ports, in front of the deployed stack's gunicorn, with certificates made by trustme for the
stack's public host, the PSP's CA (a root and the intermediate that issues its webhook client
certificate) and an unrelated CA that forges one. Requests go through curl with the host
resolved to loopback, so SNI and the Host header are the real ones.

Only the webhook's path asks for the PSP's certificate; the checkout, the API and health work
with no certificate or another CA's; nginx's access log shows the path's secret as `***`.

The shipped file is what runs (tests/support/nginx.py): only its ports, file paths and
upstream address are replaced, and a placeholder missing from it fails the test."""

import contextlib
import datetime
import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trustme
from requests.structures import CaseInsensitiveDict

from app.errors import ErrorSchema
from tests.support.deployed import PUBLIC_BASE_URL, DeployedStack, new_charge
from tests.support.nginx import needs_nginx, render_site, running_nginx
from tests.support.processes import free_port, wait_for

pytestmark = [pytest.mark.slow, needs_nginx("curl", "openssl")]

HOST = urlsplit(PUBLIC_BASE_URL).hostname
PSP_CLIENT_HOST = "webhook-client.psp-exemplo.com.br"
WEBHOOK = "/v1/api-pix/webhook/{secret}/pix"
NGINX_REQUEST_ID = re.compile(r"^req_[0-9a-f]{32}$")
CURL_SECONDS = 15
LOG_SECONDS = 5


@dataclass(frozen=True)
class Certificates:
    """PEM files: the server's (key and chain) and the CA a client trusts it by; the PSP's CA
    as nginx is given it (the root alone); client key-and-chain files."""

    server: Path
    server_ca: Path
    psp_ca: Path
    psp_client: Path
    forged_client: Path
    expired_psp_client: Path


@dataclass(frozen=True)
class Answer:
    status: int
    headers: CaseInsensitiveDict
    body: str


@dataclass(frozen=True)
class Nginx:
    port: int
    certificates: Certificates
    access_log: Path
    error_log: Path

    def call(
        self,
        path: str,
        method: str = "GET",
        client_certificate: Path | None = None,
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> Answer:
        """One request to https://HOST:<port><path>, HOST resolved to loopback."""
        headers_file = self.access_log.with_name(f"headers-{uuid.uuid4().hex}")
        command = [
            *("curl", "--silent", "--show-error", "--max-time", str(CURL_SECONDS)),
            *("--resolve", f"{HOST}:{self.port}:127.0.0.1"),
            *("--cacert", str(self.certificates.server_ca)),
            *("--request", method, "--dump-header", str(headers_file)),
            *(("--cert", str(client_certificate)) if client_certificate else ()),
            *(arg for name, value in (headers or {}).items() for arg in ("-H", f"{name}: {value}")),
            *(("--data-binary", body) if body is not None else ()),
            f"https://{HOST}:{self.port}{path}",
        ]
        finished = subprocess.run(command, capture_output=True, text=True, timeout=CURL_SECONDS)
        assert finished.returncode == 0, f"curl failed: {finished.stderr}"
        status_line, *header_lines = headers_file.read_text().strip().splitlines()
        headers_file.unlink()
        header_pairs = (line.split(":", 1) for line in header_lines)
        return Answer(
            status=int(status_line.split()[1]),
            headers=CaseInsensitiveDict({name: value.strip() for name, value in header_pairs}),
            body=finished.stdout,
        )


def make_certificates(directory: Path) -> Certificates:
    """The stack's server certificate; the PSP's client certificate issued by an intermediate
    of the PSP's root (the chain the PSP presents), the same name forged by another CA, and
    the PSP's certificate once expired."""
    server_ca = trustme.CA(organization_name="Autoridade do Servidor")
    psp_root = trustme.CA(organization_name="PSP Exemplo Raiz")
    psp_issuing = psp_root.create_child_ca()
    other_ca = trustme.CA(organization_name="Outra Autoridade")
    long_ago = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    pems = {
        "server": server_ca.issue_cert(HOST).private_key_and_cert_chain_pem,
        "server_ca": server_ca.cert_pem,
        "psp_ca": psp_root.cert_pem,
        "psp_client": psp_issuing.issue_cert(PSP_CLIENT_HOST).private_key_and_cert_chain_pem,
        "forged_client": other_ca.issue_cert(PSP_CLIENT_HOST).private_key_and_cert_chain_pem,
        "expired_psp_client": psp_issuing.issue_cert(
            PSP_CLIENT_HOST, not_before=long_ago, not_after=long_ago + datetime.timedelta(days=1)
        ).private_key_and_cert_chain_pem,
    }
    paths = {name: directory / f"{name}.pem" for name in pems}
    for name, pem in pems.items():
        pem.write_to_path(str(paths[name]))
    return Certificates(**paths)


@contextlib.contextmanager
def _psp_nginx(directory: Path, upstream_port: int) -> Iterator[Nginx]:
    """The shipped site in front of `upstream_port` with this module's certificates, the
    PSP's CA the one client certificates are verified by."""
    tls = make_certificates(directory)
    https_port = free_port()
    config = render_site(
        directory,
        https_port=https_port,
        http_port=free_port(),
        upstream_port=upstream_port,
        certificate=tls.server,
        key=tls.server,
        client_ca=tls.psp_ca,
    )
    with running_nginx(config, https_port) as logs:
        yield Nginx(https_port, tls, logs.access, logs.error)


@pytest.fixture(scope="module")
def nginx_in_front(deployed: DeployedStack, tmp_path_factory) -> Iterator[Nginx]:
    directory = tmp_path_factory.mktemp("nginx_psp_mtls")
    with _psp_nginx(directory, urlsplit(deployed.base).port) as nginx:
        yield nginx


def _secret(deployed: DeployedStack) -> str:
    return deployed.settings["API_PIX_WEBHOOK_SECRET"]


def _call_webhook(
    nginx: Nginx,
    secret: str,
    certificate: Path | None,
    body: str = '{"pix": []}',
    path: str = WEBHOOK,
) -> tuple[Answer, str]:
    """The PSP's call, marked with a request id of ours: the application answers with it and
    logs it, nginx's own answers have an id of nginx's."""
    marker = f"probe_{uuid.uuid4().hex}"
    answer = nginx.call(
        path.format(secret=secret),
        "POST",
        certificate,
        headers={"Content-Type": "application/json", "X-Request-Id": marker},
        body=body,
    )
    return answer, marker


def _envelope(answer: Answer, status: int, error_type: str, code: str) -> dict:
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    envelope = json.loads(answer.body)
    assert ErrorSchema().validate(envelope) == {}
    assert (envelope["error"]["type"], envelope["error"]["code"]) == (error_type, code)
    assert envelope["request_id"] == answer.headers["X-Request-Id"]
    return envelope


def _refused_by_nginx(answer: Answer, status: int, error_type: str, code: str) -> None:
    envelope = _envelope(answer, status, error_type, code)
    assert NGINX_REQUEST_ID.match(envelope["request_id"]), envelope


def _answered_by_the_application(
    deployed: DeployedStack, answer: Answer, marker: str, status: int, error_type: str, code: str
) -> None:
    assert _envelope(answer, status, error_type, code)["request_id"] == marker
    deployed.wait_for(lambda: marker in deployed.log(), LOG_SECONDS, f"{marker} in the web log")


def test_the_webhook_without_the_psps_certificate_never_reaches_gunicorn(deployed, nginx_in_front):
    """Even with the right secret and a valid body: no certificate, or the PSP's name forged by
    another CA, is nginx's 403."""
    for certificate in (None, nginx_in_front.certificates.forged_client):
        answer, marker = _call_webhook(nginx_in_front, _secret(deployed), certificate)

        _refused_by_nginx(answer, 403, "permission_error", "client_certificate_required")
        assert marker not in deployed.log(), certificate


def test_the_psps_certificate_reaches_the_application(deployed, nginx_in_front):
    """Behind nginx the application still judges the secret (404 as an unknown route) and the
    body (400)."""
    psp = nginx_in_front.certificates.psp_client

    wrong_secret, wrong_marker = _call_webhook(nginx_in_front, "not-the-secret-" + "x" * 32, psp)
    not_api_pix, body_marker = _call_webhook(nginx_in_front, _secret(deployed), psp, body="{}")

    _answered_by_the_application(
        deployed, wrong_secret, wrong_marker, 404, "not_found_error", "not_found"
    )
    _answered_by_the_application(
        deployed, not_api_pix, body_marker, 400, "invalid_request_error", "invalid_request"
    )


def test_every_other_path_works_with_or_without_a_client_certificate(deployed, nginx_in_front):
    """Health, the merchants' API and the payers' checkout page, whatever certificate the
    client has."""
    certificates = nginx_in_front.certificates
    api_key = {"apikey": deployed.seed["test_api_key"]}
    checkout = deployed.path(new_charge(deployed, amount=1234)["checkout_url"])
    for certificate in (None, certificates.forged_client, certificates.psp_client):
        health = nginx_in_front.call("/healthz", client_certificate=certificate)
        charges = nginx_in_front.call(
            "/v1/charges", client_certificate=certificate, headers=api_key
        )
        page = nginx_in_front.call(checkout, client_certificate=certificate)

        assert (health.status, json.loads(health.body)) == (200, {"status": "ok"}), certificate
        assert charges.status == 200, (certificate, charges.body)
        assert isinstance(json.loads(charges.body)["data"], list)
        assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
        assert "12,34" in page.body, page.body


def test_the_handshake_names_only_the_psps_ca(nginx_in_front):
    """What keeps browsers from offering or prompting for a certificate: they pick only among
    certificates of the CAs the server names, and it names the PSP's alone."""
    handshake = subprocess.run(
        [
            *("openssl", "s_client", "-connect", f"127.0.0.1:{nginx_in_front.port}"),
            *("-servername", HOST, "-CAfile", str(nginx_in_front.certificates.server_ca)),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CURL_SECONDS,
    )

    assert "Verify return code: 0 (ok)" in handshake.stdout, handshake.stdout
    named = handshake.stdout.split("Acceptable client certificate CA names", 1)[1]
    named = named.split("Requested Signature Algorithms", 1)[0]
    assert "PSP Exemplo Raiz" in named, named
    assert "Outra Autoridade" not in named and "Autoridade do Servidor" not in named, named


def test_an_expired_certificate_is_refused_on_every_path_in_the_envelope(nginx_in_front):
    """nginx refuses a certificate broken in itself before any location (its 495), even with
    `optional_no_ca`. Browsers never send one: they offer only certificates of the PSP's CA."""
    expired = nginx_in_front.certificates.expired_psp_client

    answer = nginx_in_front.call("/healthz", client_certificate=expired)

    _refused_by_nginx(answer, 400, "invalid_request_error", "client_certificate_invalid")


def test_the_access_log_shows_the_secret_as_stars_and_no_log_holds_it(deployed, nginx_in_front):
    """Masked however the path is spelled, with the method sent (nginx's refusals are internal
    redirects, which log GET in $request_method) and the certificate's verification."""
    secret = _secret(deployed)
    psp = nginx_in_front.certificates.psp_client
    calls = [  # (path sent, certificate, body), then what its access log line shows
        ((WEBHOOK, None, "{}"), '"POST /v1/api-pix/webhook/***/pix HTTP/1.1" 403 ', "NONE"),
        ((WEBHOOK, psp, "{}"), '"POST /v1/api-pix/webhook/***/pix HTTP/1.1" 400 ', "SUCCESS"),
        (
            ("//v1/api-pix//webhook/{secret}/pix", None, "{}"),
            '"POST //v1/api-pix//webhook/***/pix HTTP/1.1" 403 ',
            "NONE",
        ),
        (
            ("/v1/API-PIX/Webhook/{secret}/pix", None, "{}"),
            '"POST /v1/API-PIX/Webhook/***/pix HTTP/1.1" 404 ',
            "NONE",
        ),
    ]
    already = len(nginx_in_front.access_log.read_text())

    for (path, certificate, body), _, _ in calls:
        _call_webhook(nginx_in_front, secret, certificate, body=body, path=path)

    lines = wait_for(
        lambda: _new_lines(nginx_in_front.access_log, already, len(calls)),
        LOG_SECONDS,
        "nginx to log the webhook calls",
    )
    for line, (_, request_and_status, verification) in zip(lines, calls, strict=True):
        assert request_and_status in line and f'client_cert="{verification}"' in line, line
    assert secret not in nginx_in_front.access_log.read_text()
    assert secret not in nginx_in_front.error_log.read_text()


def _new_lines(log: Path, offset: int, count: int) -> list[str] | None:
    lines = log.read_text()[offset:].splitlines()
    return lines if len(lines) >= count else None


def test_a_webhook_call_while_gunicorn_is_down_logs_no_secret(tmp_path):
    """nginx writes the request line into each error line: errors of the webhook's location are
    logged from `crit` up only, while the same failure on another path is logged."""
    secret = "s3cr3t-" + uuid.uuid4().hex
    with _psp_nginx(tmp_path, free_port()) as nginx:
        webhook, _ = _call_webhook(nginx, secret, nginx.certificates.psp_client)
        health = nginx.call("/healthz")
        wait_for(lambda: _new_lines(nginx.access_log, 0, 2), LOG_SECONDS, "nginx's access log")

    _refused_by_nginx(webhook, 503, "api_error", "service_unavailable")
    _refused_by_nginx(health, 503, "api_error", "service_unavailable")
    errors = nginx.error_log.read_text()
    assert 'request: "GET /healthz HTTP/1.1"' in errors, errors
    assert "/v1/api-pix/webhook/" not in errors and secret not in errors, errors
    assert "/v1/api-pix/webhook/***/pix" in nginx.access_log.read_text()
