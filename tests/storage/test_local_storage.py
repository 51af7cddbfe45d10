"""The local evidence storage through its real HTTP surface: a ticket's signed PUT stores exactly
the signed bytes with no API credentials, the view address serves them back hardened, and any
other type, length, key, method or an expired or tampered address is refused before anything
is written."""

import io
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from flask import Flask

from app.storage import (
    ALLOWED_TYPES,
    MAX_EVIDENCE_BYTES,
    TYPE_HEAD_BYTES,
    EvidenceStorage,
    StorageUnavailable,
    check_backend_setting,
    evidence_storage,
)
from app.storage.local import LocalEvidenceStorage, ObjectExists, signing_secret
from app.storage.routes import register_storage
from app.storage.signing import Grant

KEY = "evidence/med_1/ev_1"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@pytest.fixture
def root(app, tmp_path, monkeypatch):
    """A fresh storage directory for this test (under pytest's tmp_path, never the instance)."""
    path = tmp_path / "evidence"
    path.mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(path))
    return path


@pytest.fixture
def storage(app, root) -> LocalEvidenceStorage:
    with app.app_context():
        return evidence_storage()


def _target(url: str) -> str:
    """The path and query of an absolute address, for the test client."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == "http://localhost"
    return f"{parts.path}?{parts.query}"


def _signed(app, grant: Grant) -> str:
    with app.app_context():
        return _target(evidence_storage().address(grant))


def _upload(client, storage, body=PNG, key=KEY, content_type="image/png", **kwargs):
    ticket = storage.upload_address(key, content_type, len(body))
    return ticket, client.put(_target(ticket.url), data=body, headers=ticket.headers, **kwargs)


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert body["error"]["code"] == code
    assert body["request_id"] == response.headers["X-Request-Id"]
    return body["error"]


def _leftovers(root) -> list[str]:
    """Every file under the storage directory, relative (temporary uploads included)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_limits_of_the_contract_are_exported():
    assert MAX_EVIDENCE_BYTES == 10 * 1024 * 1024
    assert {"image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf"} == set(
        ALLOWED_TYPES
    )


def test_a_ticket_binds_the_key_type_and_length_for_900_seconds(storage):
    ticket = storage.upload_address(KEY, "application/pdf", 12_345)
    assert isinstance(storage, EvidenceStorage)
    assert ticket.method == "PUT"
    assert ticket.expires_in == 900
    assert ticket.headers == {"Content-Type": "application/pdf", "Content-Length": "12345"}
    assert ticket.url.startswith(f"http://localhost/storage/{KEY}?")
    query = urlsplit(ticket.url).query
    assert "type=application%2Fpdf" in query
    assert "length=12345" in query
    assert "signature=" in query


@pytest.mark.parametrize(
    ("content_type", "length"),
    [
        ("text/html", 10),
        ("image/svg+xml", 10),
        ("image/png", 0),
        ("image/png", MAX_EVIDENCE_BYTES + 1),
        ("image/png", -1),
    ],
)
def test_no_ticket_for_another_type_or_size(storage, content_type, length):
    with pytest.raises(ValueError, match="Evidence"):
        storage.upload_address(KEY, content_type, length)


def test_a_signed_put_stores_the_bytes_and_the_view_address_serves_them(app, client, storage, root):
    assert storage.stored_size(KEY) is None
    _, response = _upload(client, storage)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"stored": True, "size": len(PNG)}
    assert response.headers["X-Request-Id"]
    assert storage.stored_size(KEY) == len(PNG)
    assert (root / KEY).read_bytes() == PNG
    assert _leftovers(root) == ["evidence/med_1/.ev_1.type", KEY]

    with app.app_context():
        url = evidence_storage().view_address(KEY)
    viewed = client.get(_target(url))
    assert viewed.status_code == 200
    assert viewed.data == PNG
    assert viewed.mimetype == "image/png"
    assert viewed.headers["Content-Disposition"] == "inline"
    assert viewed.headers["X-Content-Type-Options"] == "nosniff"
    assert viewed.headers["Content-Security-Policy"] == "default-src 'none'"
    cache, max_age = viewed.headers["Cache-Control"].split(", max-age=")
    assert cache == "private"
    assert 295 <= int(max_age) <= 300
    assert viewed.headers["X-Request-Id"]
    assert viewed.headers["X-Frame-Options"] == "DENY"
    assert viewed.headers["Referrer-Policy"] == "same-origin"


def test_no_api_credentials_are_needed_and_none_are_looked_at(client, storage):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(
        _target(ticket.url),
        data=PNG,
        headers=ticket.headers | {"Authorization": "Bearer not-a-key", "apikey": "nope"},
    )
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers


def test_evidence_up_to_10_mb_is_accepted_despite_the_api_body_limit(app, client, storage):
    assert app.config["MAX_CONTENT_LENGTH"] < MAX_EVIDENCE_BYTES
    body = b"%PDF-1.7\n" + b"0" * (MAX_EVIDENCE_BYTES - 9)
    _, response = _upload(client, storage, body=body, content_type="application/pdf")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert storage.stored_size(KEY) == MAX_EVIDENCE_BYTES


def test_another_content_type_is_refused(client, storage, root):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(
        _target(ticket.url),
        data=PNG,
        headers={"Content-Type": "image/jpeg", "Content-Length": str(len(PNG))},
    )
    assert _error(response, 400, "content_type_mismatch")["param"] == "Content-Type"
    assert _leftovers(root) == []


@pytest.mark.parametrize(
    ("body", "status"),
    [(PNG[:-1], 400), (PNG + b"x", 413), (b"", 400)],
    ids=["shorter", "longer", "empty"],
)
def test_a_body_of_another_declared_length_is_refused(client, storage, root, body, status):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(_target(ticket.url), data=body, headers={"Content-Type": "image/png"})
    assert _error(response, status, "content_length_mismatch")["param"] == "Content-Length"
    assert storage.stored_size(KEY) is None
    assert _leftovers(root) == []


def _put_stream(client, ticket, body: bytes, terminated: bool = False):
    """PUT `body` while the request still declares the ticket's Content-Length (the test
    client would otherwise recompute it from the stream)."""
    environ = {"CONTENT_LENGTH": ticket.headers["Content-Length"]}
    if terminated:
        environ["wsgi.input_terminated"] = True
    return client.put(
        _target(ticket.url),
        input_stream=io.BytesIO(body),
        content_type=ticket.headers["Content-Type"],
        environ_overrides=environ,
    )


@pytest.mark.parametrize("terminated", [False, True], ids=["plain", "server-terminated"])
def test_a_body_that_ends_before_its_content_length_is_refused(client, storage, root, terminated):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = _put_stream(client, ticket, PNG[:100], terminated)
    assert "ended" in _error(response, 400, "content_length_mismatch")["message"]
    assert _leftovers(root) == []


def test_a_body_longer_than_its_content_length_is_refused(client, storage, root):
    """A server that terminates the input itself (gunicorn, chunked bodies) lets the route
    see bytes past Content-Length: reading one more than signed is enough to refuse."""
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = _put_stream(client, ticket, PNG + b"trailing", terminated=True)
    assert "longer" in _error(response, 413, "content_length_mismatch")["message"]
    assert _leftovers(root) == []


def test_bytes_past_content_length_on_a_plain_server_are_not_read(client, storage, root):
    """Without `wsgi.input_terminated` the body ends at Content-Length (HTTP framing): what
    follows is not this request's, and exactly the signed bytes are stored."""
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = _put_stream(client, ticket, PNG + b"trailing")
    assert response.status_code == 200
    assert (root / KEY).read_bytes() == PNG


def test_a_chunked_body_without_content_length_is_refused(client, storage, root):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(
        _target(ticket.url),
        input_stream=io.BytesIO(PNG),
        headers={"Content-Type": "image/png", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert "Content-Length" in _error(response, 400, "content_length_mismatch")["message"]
    assert _leftovers(root) == []


def test_evidence_is_written_once_and_a_failed_put_stores_nothing(client, storage, root):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    broken = _put_stream(client, ticket, PNG[:10])
    assert broken.status_code == 400
    assert not (root / KEY).exists()  # a failed upload can be retried with the same address
    first = client.put(_target(ticket.url), data=PNG, headers=ticket.headers)
    assert first.status_code == 200
    replacement = bytes(reversed(PNG))
    again = client.put(_target(ticket.url), data=replacement, headers=ticket.headers)
    _error(again, 409, "already_uploaded")
    assert (root / KEY).read_bytes() == PNG
    assert _leftovers(root) == ["evidence/med_1/.ev_1.type", KEY]


def test_a_race_to_store_the_same_object_keeps_the_first(storage, root):
    storage.save(KEY, "image/png", [PNG])
    with pytest.raises(ObjectExists):
        storage.save(KEY, "image/png", [bytes(reversed(PNG))])
    assert (root / KEY).read_bytes() == PNG
    assert _leftovers(root) == ["evidence/med_1/.ev_1.type", KEY]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda path: path.replace("ev_1", "ev_2", 1),
        lambda path: path.replace("signature=", "signature=0", 1),
        lambda path: path.replace("expires=", "expires=9", 1),
        lambda path: path.replace("type=image%2Fpng", "type=image%2Fgif", 1),
        lambda path: path.split("&signature=")[0],
    ],
    ids=["key", "signature", "expiry", "type", "no-signature"],
)
def test_a_tampered_address_is_refused(client, storage, root, tamper):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    tampered = tamper(_target(ticket.url))
    content_type = "image/gif" if "image%2Fgif" in tampered else "image/png"
    response = client.put(tampered, data=PNG, headers={"Content-Type": content_type})
    error = _error(response, 403, "invalid_signature")
    assert error["type"] == "permission_error"
    assert _leftovers(root) == []


def test_a_length_changed_in_the_address_is_refused(client, storage, root):
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    longer = _target(ticket.url).replace(f"length={len(PNG)}", f"length={len(PNG) + 1}")
    response = client.put(longer, data=PNG + b"x", headers={"Content-Type": "image/png"})
    _error(response, 403, "invalid_signature")
    assert _leftovers(root) == []


def test_expired_addresses_are_refused(app, client, storage, root):
    past = int(time.time()) - 1
    upload = Grant("PUT", KEY, past, "image/png", len(PNG))
    response = client.put(_signed(app, upload), data=PNG, headers={"Content-Type": "image/png"})
    assert "expired" in _error(response, 403, "invalid_signature")["message"]
    assert _leftovers(root) == []

    _upload(client, storage)
    response = client.get(_signed(app, Grant("GET", KEY, past)))
    assert "expired" in _error(response, 403, "invalid_signature")["message"]


def test_an_address_works_only_for_its_own_method(app, client, storage):
    ticket, stored = _upload(client, storage)
    assert stored.status_code == 200
    _error(client.get(_target(ticket.url)), 403, "invalid_signature")

    view = _target(storage.view_address(KEY))
    response = client.put(view, data=PNG, headers={"Content-Type": "image/png"})
    _error(response, 403, "invalid_signature")


def test_addresses_are_signed_with_a_derived_key_not_the_secret_key(app, client, storage, root):
    secret_key = app.config["SECRET_KEY"]
    assert storage.secret == signing_secret(secret_key)
    assert storage.secret not in (secret_key, secret_key.encode())
    raw = LocalEvidenceStorage(root, secret_key.encode(), "http://localhost")
    ticket = raw.upload_address(KEY, "image/png", len(PNG))
    response = client.put(_target(ticket.url), data=PNG, headers=ticket.headers)
    _error(response, 403, "invalid_signature")


@pytest.mark.parametrize(
    "key",
    [
        "../x",
        "a/../../b",
        "/etc/passwd",
        "a/./b",
        "a//b",
        ".hidden",
        "a/.ev_1.type",
        "a/",
        "",
        "a\\b",
        "a b",
        "evidência",
        "x" * 513,
    ],
)
def test_keys_outside_the_safe_relative_form_are_refused(storage, key):
    with pytest.raises(ValueError, match="key"):
        storage.upload_address(key, "image/png", 10)
    with pytest.raises(ValueError, match="key"):
        storage.view_address(key)
    with pytest.raises(ValueError, match="key"):
        storage.stored_size(key)


@pytest.mark.parametrize("key", ["../x", "a/../../b", ".hidden"])
def test_a_traversal_key_is_refused_even_with_a_valid_signature(app, client, root, key):
    """Defence in depth: even a correctly signed address for a bad key writes nothing."""
    grant = Grant("PUT", key, int(time.time()) + 60, "image/png", len(PNG))
    secret = signing_secret(app.config["SECRET_KEY"])
    encoded = key.replace(".", "%2E")
    query = "&".join(f"{name}={value}" for name, value in grant.params(secret).items())
    query = query.replace("image/png", "image%2Fpng")
    response = client.put(
        f"/storage/{encoded}?{query}", data=PNG, headers={"Content-Type": "image/png"}
    )
    _error(response, 400, "invalid_key")
    assert not (root.parent / "x").exists()
    assert not (root.parent / "b").exists()
    assert _leftovers(root.parent) == []


def test_an_absolute_path_address_is_not_served(client, storage):
    response = client.get("/storage//etc/passwd?expires=9999999999&signature=0")
    assert response.status_code in {308, 400, 403, 404}
    assert b"root:" not in response.data


def test_a_view_of_nothing_uploaded_is_404(client, storage):
    _error(client.get(_target(storage.view_address(KEY))), 404, "not_found")


def test_an_unwritable_directory_answers_503(app, client, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(blocker / "evidence"))
    with app.app_context():
        storage = evidence_storage()
    assert storage.healthy() is False
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(_target(ticket.url), data=PNG, headers=ticket.headers)
    error = _error(response, 503, "service_unavailable")
    assert error["type"] == "api_error"
    assert response.headers["Cache-Control"] == "no-store"


def test_a_failing_write_answers_503_and_leaves_no_temporary_file(
    client, storage, root, monkeypatch
):
    def disk_full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("app.storage.local.os.replace", disk_full)
    _, response = _upload(client, storage)
    _error(response, 503, "service_unavailable")
    assert _leftovers(root) == []


def test_the_default_directory_is_under_the_instance_path(app, monkeypatch):
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", "")
    with app.app_context():
        assert evidence_storage().root == Path(app.instance_path) / "evidence"


def test_a_configured_directory_that_is_missing_is_down_and_never_created(
    app, client, tmp_path, monkeypatch
):
    unmounted = tmp_path / "volume" / "evidence"
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(unmounted))
    with app.app_context():
        storage = evidence_storage()
    assert storage.healthy() is False
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    response = client.put(_target(ticket.url), data=PNG, headers=ticket.headers)
    _error(response, 503, "service_unavailable")
    assert not unmounted.exists()


def test_a_writable_directory_is_healthy(storage, root):
    assert storage.healthy() is True
    assert _leftovers(root) == []


def test_stored_size_reports_an_unreadable_storage(storage, monkeypatch):
    def broken(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("app.storage.local.Path.is_file", broken)
    with pytest.raises(StorageUnavailable):
        storage.stored_size(KEY)


@pytest.mark.parametrize("backend", ["gcs", "ftp", ""])
def test_an_unknown_backend_is_refused(app, monkeypatch, backend):
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE", backend)
    with app.app_context(), pytest.raises(RuntimeError, match=r"EVIDENCE_STORAGE.*local"):
        evidence_storage()
    with pytest.raises(RuntimeError, match="local"):
        check_backend_setting(app.config)


def test_an_unknown_backend_stops_the_start_up():
    fresh = Flask(__name__)
    fresh.config["EVIDENCE_STORAGE"] = "s3"
    with pytest.raises(RuntimeError, match="EVIDENCE_STORAGE"):
        register_storage(fresh)


def test_the_type_check_reads_the_first_bytes_of_a_stored_file(client, storage, monkeypatch):
    assert storage.stored_head(KEY) is None
    _upload(client, storage)
    assert storage.stored_head(KEY) == PNG[:TYPE_HEAD_BYTES]

    def broken(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("app.storage.local.Path.open", broken)
    with pytest.raises(StorageUnavailable):
        storage.stored_head(KEY)


def test_a_file_that_does_not_start_like_its_signed_type_is_not_stored(client, storage, root):
    html = b"<html><script>alert(1)</script>" + b" " * (len(PNG) - 31)
    _, response = _upload(client, storage, body=html)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "content_type_mismatch"
    assert storage.stored_size(KEY) is None
    assert _leftovers(root) == []
    _, response = _upload(client, storage)  # the same address, with the real file
    assert response.status_code == 200
