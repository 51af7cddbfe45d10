"""Evidence PUT under a WSGI server that terminates the request body itself (gunicorn sets
`wsgi.input_terminated`; Werkzeug then caps the stream at the route's limit): exactly the
signed bytes are stored, and a body that goes on past them is still refused. The same server
for real: tests/deployed/test_evidence_upload.py."""

import io
from urllib.parse import urlsplit

import pytest

from app.storage import evidence_storage

KEY = "evidence/med_1/ev_1"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@pytest.fixture
def storage(app, tmp_path, monkeypatch):
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(tmp_path))
    with app.app_context():
        return evidence_storage()


def _put_terminated(client, storage, body: bytes):
    """PUT `body` as gunicorn hands it over: Content-Length as signed, input terminated."""
    ticket = storage.upload_address(KEY, "image/png", len(PNG))
    url = urlsplit(ticket.url)
    return client.put(
        f"{url.path}?{url.query}",
        input_stream=io.BytesIO(body),
        content_type="image/png",
        environ_overrides={
            "CONTENT_LENGTH": ticket.headers["Content-Length"],
            "wsgi.input_terminated": True,
        },
    )


def test_exactly_the_signed_bytes_are_stored(client, storage, tmp_path):
    response = _put_terminated(client, storage, PNG)

    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"stored": True, "size": len(PNG)}
    assert (tmp_path / KEY).read_bytes() == PNG


def test_one_byte_past_the_signed_length_is_refused(client, storage, tmp_path):
    response = _put_terminated(client, storage, PNG + b"x")

    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "content_length_mismatch"
    assert not (tmp_path / KEY).exists()
