"""The S3-compatible evidence storage: the signer reproduces AWS's published SigV4 examples, and
through real HTTP a ticket stores exactly the signed bytes with no credentials while another
type, size, object, method or an expired address is refused by the store itself.

No real S3-compatible server can be installed here (moto needs botocore, whose pins exclude
this project's python-dateutil, and moto does not check presigned signatures anyway), so the
store is `FakeS3`: a small HTTP server that authenticates every request the way S3 and MinIO
do, by recomputing the SigV4 signature from the request it received. Its verifier is
separate code from app.storage.s3 and is itself checked against AWS's published examples.
"""

import hashlib
import hmac
import re
import socket
import threading
import time
from calendar import timegm
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import pytest
import requests
from flask import Flask

from app import create_app
from app.api.health import STORAGE_HEALTH
from app.config import load_settings
from app.storage import (
    TYPE_HEAD_BYTES,
    StorageUnavailable,
    check_backend_setting,
    content_matches_type,
    evidence_storage,
)
from app.storage.routes import register_storage
from app.storage.s3 import Credentials, S3EvidenceStorage, Signer

KEY = "evidence/med_1/ev_1"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
BUCKET = "acme-evidence"
ACCESS_KEY = "AKIATESTEVIDENCE"
SECRET = "test/secret+key"

# AWS's SigV4 examples for S3 (GET examplebucket/test.txt on 24 May 2013).
AWS_ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_TIME = 1369353600  # 20130524T000000Z
AWS_HOST = "examplebucket.s3.amazonaws.com"
AWS_PRESIGNED_TARGET = (
    "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
)
AWS_HEADER_SIGNED = {
    "host": AWS_HOST,
    "range": "bytes=0-9",
    "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
    "x-amz-date": "20130524T000000Z",
    "authorization": (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    ),
}


# The store's side: SigV4 verification written from AWS's description, not from app code.

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})"
)


def verify_sigv4(
    method: str, target: str, headers: dict[str, str], keys: dict, now: float
) -> str | None:
    """None when the request is authentic, else the S3 error code. `headers` are the ones
    received (lower-case names); `keys` maps an access key id to (secret, session token)."""
    raw_path, _, raw_query = target.partition("?")
    query = dict(parse_qsl(raw_query, keep_blank_values=True))
    if "X-Amz-Signature" in query:
        presented = query.pop("X-Amz-Signature")
        credential, names = query.get("X-Amz-Credential", ""), query.get("X-Amz-SignedHeaders")
        stamp, token = query.get("X-Amz-Date", ""), query.get("X-Amz-Security-Token")
        payload = "UNSIGNED-PAYLOAD"
        if not 0 <= now - _epoch(stamp) <= int(query.get("X-Amz-Expires", "0")):
            return "AccessDenied"
    elif match := _AUTHORIZATION.fullmatch(headers.get("authorization", "")):
        credential, names, presented = match.groups()
        stamp, token = headers.get("x-amz-date", ""), headers.get("x-amz-security-token")
        payload = headers.get("x-amz-content-sha256", "")
        if abs(now - _epoch(stamp)) > 900:
            return "RequestTimeTooSkewed"
    else:
        return "AccessDenied"
    access_key, day, region, service, terminator = (credential.split("/") + [""] * 5)[:5]
    if access_key not in keys:
        return "InvalidAccessKeyId"
    secret, expected_token = keys[access_key]
    if token != expected_token:
        return "InvalidToken"
    signed = (names or "").split(";")
    if "host" not in signed or any(name not in headers for name in signed):
        return "AccessDenied"
    if (day, service, terminator) != (stamp[:8], "s3", "aws4_request"):
        return "AuthorizationQueryParametersError"
    canonical = "\n".join(
        [
            method,
            quote(unquote(raw_path), safe="/"),
            "&".join(sorted(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query.items())),
            "".join(f"{name}:{headers[name].strip()}\n" for name in signed),
            ";".join(signed),
            payload,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    string_to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{digest}"
    key = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, presented) else "SignatureDoesNotMatch"


def _epoch(stamp: str) -> float:
    try:
        return timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return 0.0


class FakeS3(ThreadingHTTPServer):
    """One path-style bucket in memory, behind SigV4 authentication, on 127.0.0.1."""

    def __init__(self, keys: dict):
        super().__init__(("127.0.0.1", 0), _FakeS3Handler)
        self.keys = keys
        self.objects: dict[str, tuple[str, bytes]] = {}
        self.fail_with: int | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes):
        if self.fail_with:
            return self.fail_with, {}, b""
        error = verify_sigv4(method, target, headers, self.keys, time.time())
        if error:
            return 403, {"Content-Type": "application/xml"}, _error_xml(error)
        bucket, _, key = unquote(target.partition("?")[0]).lstrip("/").partition("/")
        if bucket != BUCKET:
            return 404, {"Content-Type": "application/xml"}, _error_xml("NoSuchBucket")
        if not key:
            return 200, {}, b""
        if method == "PUT":
            self.objects[key] = (headers.get("content-type", "binary/octet-stream"), body)
            return 200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'}, b""  # noqa: S324
        if key not in self.objects:
            return 404, {"Content-Type": "application/xml"}, _error_xml("NoSuchKey")
        content_type, stored = self.objects[key]
        return 200, {"Content-Type": content_type}, stored


class _FakeS3Handler(BaseHTTPRequestHandler):
    server: FakeS3

    def do_PUT(self):
        self._answer()

    def do_GET(self):
        self._answer()

    def do_HEAD(self):
        self._answer()

    def log_message(self, *_args):
        pass

    def _answer(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, response_headers, payload = self.server.answer(
            self.command, self.path, headers, body
        )
        self.send_response(status)
        for name, value in response_headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


def _error_xml(code: str) -> bytes:
    return f"<Error><Code>{code}</Code></Error>".encode()


@pytest.fixture
def fake_s3() -> Iterator[FakeS3]:
    server = FakeS3({ACCESS_KEY: (SECRET, None)})
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _storage(endpoint: str, secret: str = SECRET, token: str = "", **kwargs) -> S3EvidenceStorage:
    signer = Signer(Credentials(ACCESS_KEY, secret, token), "us-east-1")
    return S3EvidenceStorage(endpoint, BUCKET, signer, **kwargs)


@pytest.fixture
def storage(fake_s3) -> S3EvidenceStorage:
    return _storage(fake_s3.endpoint)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


# The signer against AWS's published examples


def test_a_view_address_is_aws_s_presigned_example():
    signer = Signer(Credentials(AWS_ACCESS_KEY, AWS_SECRET), "us-east-1")
    storage = S3EvidenceStorage(
        "https://s3.amazonaws.com",
        "examplebucket",
        signer,
        addressing="virtual",
        clock=lambda: AWS_TIME,
    )
    assert storage.view_address("test.txt", expires_in=86400) == (
        f"https://{AWS_HOST}{AWS_PRESIGNED_TARGET}"
    )


def test_header_signing_is_aws_s_get_object_example():
    signer = Signer(Credentials(AWS_ACCESS_KEY, AWS_SECRET), "us-east-1")
    headers = signer.signed_headers(
        "GET", AWS_HOST, "/test.txt", "20130524T000000Z", {"Range": "bytes=0-9"}
    )
    assert headers == AWS_HEADER_SIGNED


def test_the_fake_store_verifies_aws_s_examples_and_refuses_any_change():
    keys = {AWS_ACCESS_KEY: (AWS_SECRET, None)}
    host = {"host": AWS_HOST}
    assert verify_sigv4("GET", AWS_PRESIGNED_TARGET, host, keys, AWS_TIME + 60) is None
    assert verify_sigv4("GET", "/test.txt", AWS_HEADER_SIGNED, keys, AWS_TIME + 60) is None
    changed = {
        "method": ("PUT", AWS_PRESIGNED_TARGET, host),
        "object": ("GET", AWS_PRESIGNED_TARGET.replace("test", "tess"), host),
        "host": ("GET", AWS_PRESIGNED_TARGET, {"host": "otherbucket.s3.amazonaws.com"}),
        "signature": ("GET", AWS_PRESIGNED_TARGET.replace("404", "405"), host),
        "range": ("GET", "/test.txt", AWS_HEADER_SIGNED | {"range": "bytes=0-99"}),
    }
    for method, target, headers in changed.values():
        assert verify_sigv4(method, target, headers, keys, AWS_TIME + 60) == "SignatureDoesNotMatch"
    assert verify_sigv4("GET", AWS_PRESIGNED_TARGET, host, keys, AWS_TIME + 86401) == (
        "AccessDenied"
    )
    assert verify_sigv4("GET", "/test.txt", host, keys, AWS_TIME) == "AccessDenied"


# Tickets and addresses


def test_a_ticket_is_a_presigned_put_binding_type_and_length_for_900_seconds(storage, fake_s3):
    ticket = storage.upload_address(KEY, "application/pdf", 12_345)
    assert ticket.method == "PUT"
    assert ticket.expires_in == 900
    assert ticket.headers == {"Content-Type": "application/pdf", "Content-Length": "12345"}
    assert ticket.url.startswith(f"{fake_s3.endpoint}/{BUCKET}/{KEY}?")
    query = _query(ticket.url)
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-SignedHeaders"] == "content-length;content-type;host"
    assert query["X-Amz-Expires"] == "900"
    assert query["X-Amz-Credential"].startswith(f"{ACCESS_KEY}/")
    assert query["X-Amz-Credential"].endswith("/us-east-1/s3/aws4_request")
    assert re.fullmatch(r"[0-9a-f]{64}", query["X-Amz-Signature"])
    assert SECRET not in ticket.url
    assert "X-Amz-Security-Token" not in query


def test_a_view_address_is_a_presigned_get_for_300_seconds(storage):
    query = _query(storage.view_address(KEY))
    assert query["X-Amz-Expires"] == "300"
    assert query["X-Amz-SignedHeaders"] == "host"


@pytest.mark.parametrize(
    ("content_type", "length"),
    [("text/html", 10), ("image/svg+xml", 10), ("image/png", 0), ("image/png", 10 * 2**20 + 1)],
)
def test_no_ticket_for_another_type_or_size(storage, content_type, length):
    with pytest.raises(ValueError, match="Evidence"):
        storage.upload_address(KEY, content_type, length)


@pytest.mark.parametrize("key", ["../x", "/etc/passwd", "a/./b", "a//b", ".hidden", "a b", ""])
def test_keys_outside_the_safe_relative_form_are_refused(storage, key):
    with pytest.raises(ValueError, match="key"):
        storage.upload_address(key, "image/png", 10)
    with pytest.raises(ValueError, match="key"):
        storage.view_address(key)
    with pytest.raises(ValueError, match="key"):
        storage.stored_size(key)


# Through HTTP, against a store that checks signatures


def test_a_ticket_stores_the_bytes_without_credentials_and_the_view_address_serves_them(
    storage, fake_s3
):
    assert storage.stored_size(KEY) is None
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = requests.put(ticket.url, data=PNG, headers=ticket.headers, timeout=5)
    assert response.status_code == 200, response.text
    assert fake_s3.objects[KEY] == ("image/png", PNG)
    assert storage.stored_size(KEY) == len(PNG)

    viewed = requests.get(storage.view_address(KEY), timeout=5)
    assert viewed.status_code == 200
    assert viewed.content == PNG
    assert viewed.headers["Content-Type"] == "image/png"


def test_another_content_type_is_refused_by_the_store(storage, fake_s3):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    headers = ticket.headers | {"Content-Type": "text/html"}
    response = requests.put(ticket.url, data=PNG, headers=headers, timeout=5)
    assert response.status_code == 403
    assert "SignatureDoesNotMatch" in response.text
    assert fake_s3.objects == {}


@pytest.mark.parametrize("body", [PNG[:-1], PNG + b"x"], ids=["shorter", "longer"])
def test_a_body_of_another_size_is_refused_by_the_store(storage, fake_s3, body):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = requests.put(ticket.url, data=body, headers=ticket.headers, timeout=5)
    assert response.request.headers["Content-Length"] == str(len(body))
    assert response.status_code == 403
    assert "SignatureDoesNotMatch" in response.text
    assert storage.stored_size(KEY) is None


def test_an_address_for_another_object_or_method_is_refused(storage, fake_s3):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    other = ticket.url.replace("ev_1", "ev_2", 1)
    assert requests.put(other, data=PNG, headers=ticket.headers, timeout=5).status_code == 403
    view = storage.view_address(KEY)
    assert requests.put(view, data=PNG, headers=ticket.headers, timeout=5).status_code == 403
    assert requests.get(ticket.url, timeout=5).status_code == 403
    assert fake_s3.objects == {}


def test_an_expired_ticket_is_refused(fake_s3):
    past = _storage(fake_s3.endpoint, clock=lambda: time.time() - 901)
    ticket = past.upload_address(KEY, "image/png", len(PNG))
    response = requests.put(ticket.url, data=PNG, headers=ticket.headers, timeout=5)
    assert response.status_code == 403
    assert "AccessDenied" in response.text
    assert fake_s3.objects == {}


def test_a_session_token_is_signed_into_addresses_and_requests(fake_s3):
    fake_s3.keys[ACCESS_KEY] = (SECRET, "session/token==")
    storage = _storage(fake_s3.endpoint, token="session/token==")
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    assert _query(ticket.url)["X-Amz-Security-Token"] == "session/token=="
    response = requests.put(ticket.url, data=PNG, headers=ticket.headers, timeout=5)
    assert response.status_code == 200, response.text
    assert storage.stored_size(KEY) == len(PNG)
    assert storage.healthy() is True

    without = _storage(fake_s3.endpoint)
    assert without.healthy() is False


def test_a_reachable_bucket_is_healthy(storage):
    assert storage.healthy() is True


def test_wrong_credentials_make_the_storage_unavailable(fake_s3):
    storage = _storage(fake_s3.endpoint, secret="not-the-secret")
    assert storage.healthy() is False
    with pytest.raises(StorageUnavailable, match="403"):
        storage.stored_size(KEY)


def test_a_failing_store_is_unavailable(storage, fake_s3):
    fake_s3.fail_with = 503
    assert storage.healthy() is False
    with pytest.raises(StorageUnavailable, match="503"):
        storage.stored_size(KEY)


def test_a_store_that_is_down_is_unavailable():
    storage = _storage(f"http://127.0.0.1:{_closed_port()}")
    assert storage.healthy() is False
    with pytest.raises(StorageUnavailable, match="reached"):
        storage.stored_size(KEY)


def test_a_store_that_does_not_answer_in_time_is_unavailable():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        storage = _storage(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.2)
        started = time.monotonic()
        with pytest.raises(StorageUnavailable):
            storage.stored_size(KEY)
        assert storage.healthy() is False
    assert time.monotonic() - started < 3


# Addressing


def test_virtual_hosted_addresses_put_the_bucket_in_the_host(monkeypatch):
    signer = Signer(Credentials(ACCESS_KEY, SECRET), "sa-east-1")
    storage = S3EvidenceStorage(
        "https://s3.sa-east-1.amazonaws.com", BUCKET, signer, addressing="virtual"
    )
    host = f"{BUCKET}.s3.sa-east-1.amazonaws.com"
    keys = {ACCESS_KEY: (SECRET, None)}
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    parts = urlsplit(ticket.url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", host, f"/{KEY}")
    received = {"host": host, "content-type": "image/png", "content-length": str(len(PNG))}
    target = f"{parts.path}?{parts.query}"
    assert verify_sigv4("PUT", target, received, keys, time.time()) is None

    sent = []

    def head(url, headers, **_kwargs):
        sent.append((url, headers))
        response = requests.Response()
        response.status_code = 200
        return response

    monkeypatch.setattr("app.storage.s3.requests.head", head)
    assert storage.healthy() is True
    url, headers = sent[0]
    assert url == f"https://{host}/"
    assert verify_sigv4("HEAD", "/", headers, keys, time.time()) is None


def test_a_default_port_is_left_out_of_the_host_as_http_clients_do():
    storage = _storage("https://minio.example.com:443")
    assert storage.view_address(KEY).startswith(f"https://minio.example.com/{BUCKET}/{KEY}?")
    storage = _storage("http://[::1]:9000")
    assert storage.view_address(KEY).startswith(f"http://[::1]:9000/{BUCKET}/{KEY}?")


# Configuration


def _s3_settings(endpoint: str = "http://127.0.0.1:9000") -> dict:
    return {
        "EVIDENCE_STORAGE": "s3",
        "EVIDENCE_S3_ENDPOINT": endpoint,
        "EVIDENCE_S3_BUCKET": BUCKET,
        "EVIDENCE_S3_REGION": "us-east-1",
        "EVIDENCE_S3_ACCESS_KEY_ID": ACCESS_KEY,
        "EVIDENCE_S3_SECRET_ACCESS_KEY": SECRET,
        "EVIDENCE_S3_SESSION_TOKEN": "",
        "EVIDENCE_S3_ADDRESSING": "path",
        "EVIDENCE_S3_TIMEOUT_SECONDS": 5,
    }


@pytest.fixture
def s3_app(app, fake_s3, monkeypatch):
    """The test app with EVIDENCE_STORAGE=s3 on the fake store, for this test only."""
    for name, value in _s3_settings(fake_s3.endpoint).items():
        monkeypatch.setitem(app.config, name, value)
    return app


def test_the_settings_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("EVIDENCE_S3_ENDPOINT", "http://127.0.0.1:9000/")
    monkeypatch.setenv("EVIDENCE_S3_TIMEOUT_SECONDS", "2")
    for name in ("REGION", "ADDRESSING", "SESSION_TOKEN"):
        monkeypatch.delenv(f"EVIDENCE_S3_{name}", raising=False)
    settings = load_settings()
    assert settings["EVIDENCE_S3_ENDPOINT"] == "http://127.0.0.1:9000"
    assert settings["EVIDENCE_S3_TIMEOUT_SECONDS"] == 2
    assert settings["EVIDENCE_S3_REGION"] == "us-east-1"
    assert settings["EVIDENCE_S3_ADDRESSING"] == "path"
    assert settings["EVIDENCE_S3_SESSION_TOKEN"] == ""


def test_evidence_storage_is_the_s3_backend_when_configured(s3_app, fake_s3):
    with s3_app.app_context():
        storage = evidence_storage()
    assert isinstance(storage, S3EvidenceStorage)
    assert storage.view_address(KEY).startswith(f"{fake_s3.endpoint}/{BUCKET}/{KEY}?")
    assert storage.healthy() is True


@pytest.mark.parametrize(
    "missing",
    [
        "EVIDENCE_S3_ENDPOINT",
        "EVIDENCE_S3_BUCKET",
        "EVIDENCE_S3_ACCESS_KEY_ID",
        "EVIDENCE_S3_SECRET_ACCESS_KEY",
    ],
)
def test_s3_without_a_required_setting_is_refused(missing):
    settings = _s3_settings() | {missing: ""}
    with pytest.raises(RuntimeError, match=rf"EVIDENCE_STORAGE=s3 needs {missing}\."):
        check_backend_setting(settings)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("EVIDENCE_S3_ENDPOINT", "s3.amazonaws.com", "EVIDENCE_S3_ENDPOINT"),
        ("EVIDENCE_S3_ENDPOINT", "ftp://127.0.0.1:9000", "EVIDENCE_S3_ENDPOINT"),
        ("EVIDENCE_S3_ENDPOINT", "http://127.0.0.1:9000/prefix", "EVIDENCE_S3_ENDPOINT"),
        ("EVIDENCE_S3_BUCKET", "Evidence_Bucket", "EVIDENCE_S3_BUCKET"),
        ("EVIDENCE_S3_BUCKET", "a/b", "EVIDENCE_S3_BUCKET"),
        ("EVIDENCE_S3_REGION", "us-east-1\nx", "EVIDENCE_S3_REGION"),
        ("EVIDENCE_S3_ADDRESSING", "dns", "EVIDENCE_S3_ADDRESSING"),
        ("EVIDENCE_S3_TIMEOUT_SECONDS", 0, "EVIDENCE_S3_TIMEOUT_SECONDS"),
    ],
)
def test_s3_with_an_unusable_setting_is_refused(name, value, message):
    with pytest.raises(RuntimeError, match=message):
        check_backend_setting(_s3_settings() | {name: value})


def test_s3_without_its_settings_stops_the_start_up(app):
    fresh = Flask(__name__)
    fresh.config["EVIDENCE_STORAGE"] = "s3"
    with pytest.raises(RuntimeError, match="EVIDENCE_STORAGE=s3 needs EVIDENCE_S3_ENDPOINT, "):
        register_storage(fresh)
    with pytest.raises(RuntimeError, match="EVIDENCE_S3_BUCKET"):
        create_app(
            {
                "APP_ENV": "testing",
                "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
                "SQLALCHEMY_ENGINE_OPTIONS": app.config["SQLALCHEMY_ENGINE_OPTIONS"],
                "EVIDENCE_STORAGE": "s3",
                "EVIDENCE_S3_ENDPOINT": "http://127.0.0.1:9000",
            }
        )


def test_the_local_storage_routes_do_not_exist_under_s3(s3_app, client):
    for response in (
        client.put(f"/storage/{KEY}?expires=9999999999&signature=0", data=PNG),
        client.get(f"/storage/{KEY}?expires=9999999999&signature=0"),
    ):
        assert response.status_code == 404
        assert response.get_json()["error"]["code"] == "not_found"


def test_readyz_reports_the_evidence_storage(s3_app, client, fake_s3, redis):
    s3_app.extensions.pop(STORAGE_HEALTH, None)
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json["checks"]["evidence_storage"] == "ok"

    fake_s3.fail_with = 503
    assert client.get("/readyz").json["checks"]["evidence_storage"] == "ok"  # checked < 30 s ago
    s3_app.extensions.pop(STORAGE_HEALTH)
    response = client.get("/readyz")
    s3_app.extensions.pop(STORAGE_HEALTH)  # leave no cached answer to later tests
    assert response.status_code == 200  # payments go on; evidence waits
    assert response.json == {
        "status": "degraded",
        "checks": {"database": "ok", "redis": "ok", "evidence_storage": "unreachable"},
    }


@pytest.mark.parametrize(
    ("addressing", "origin"),
    [("path", "http://127.0.0.1:9000"), ("virtual", f"http://{BUCKET}.127.0.0.1:9000")],
)
def test_dashboard_pages_may_send_files_to_the_store(app, addressing, origin):
    """The dispute page's script PUTs straight to the store: its origin is in connect-src."""
    s3 = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
            "SQLALCHEMY_ENGINE_OPTIONS": app.config["SQLALCHEMY_ENGINE_OPTIONS"],
            "REDIS_URL": app.config["REDIS_URL"],
        }
        | _s3_settings("http://127.0.0.1:9000")
        | {"EVIDENCE_S3_ADDRESSING": addressing}
    )
    policy = s3.test_client().get("/healthz").headers["Content-Security-Policy"]
    assert f"connect-src 'self' {origin};" in policy


def test_the_type_check_reads_only_the_first_bytes_with_a_signed_ranged_get(storage, fake_s3):
    """The store checks the signature, Range header included; the store may answer the
    whole object (as this fake does) and only the first bytes are read."""
    assert storage.stored_head(KEY) is None
    fake_s3.objects[KEY] = ("image/png", PNG)
    head = storage.stored_head(KEY)
    assert head == PNG[:TYPE_HEAD_BYTES]
    assert content_matches_type(head, "image/png")
    assert not content_matches_type(head, "application/pdf")

    with pytest.raises(StorageUnavailable, match="403"):
        _storage(fake_s3.endpoint, secret="not-the-secret").stored_head(KEY)
    fake_s3.fail_with = 503
    with pytest.raises(StorageUnavailable, match="503"):
        storage.stored_head(KEY)
