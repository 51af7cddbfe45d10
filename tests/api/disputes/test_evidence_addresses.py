"""Evidence upload addresses (issue 10): the signature is the only credential, so a changed,
expired or re-used address is refused with the API's error envelope, and the file must be
of the type it was signed for (its first bytes, not only its Content-Type header)."""

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from app.storage import ALLOWED_TYPES, content_matches_type
from app.storage.local import LocalEvidenceStorage
from tests.support import disputes as d
from tests.support.http import assert_error

PDF = b"%PDF-1.7\n" + bytes(range(256)) + b"\n%%EOF"
SAMPLES = {
    "application/pdf": PDF,
    "image/png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 32,
    "image/jpeg": b"\xff\xd8\xff\xe0" + b"\x00" * 32,
    "image/gif": b"GIF89a" + b"\x00" * 32,
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 32,
}


def _ticket(client, shop, case, body=PDF, mime_type="application/pdf") -> dict:
    response = d.ticket(client, shop.api_key, case["id"], body, mime_type=mime_type)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _put(client, url: str, body: bytes, headers: dict):
    parts = urlsplit(url)
    return client.put(f"{parts.path}?{parts.query}", data=body, headers=headers)


def _refused(response):
    return assert_error(response, 403, "permission_error", "invalid_signature")


def test_every_change_to_a_signed_address_is_refused(client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    url, headers = ticket["upload_url"], ticket["upload_headers"]
    later = int(parse_qs(urlsplit(url).query)["expires"][0]) + 3600
    signature = parse_qs(urlsplit(url).query)["signature"][0]
    tampered = [
        re.sub(r"expires=\d+", f"expires={later}", url),  # a longer life
        url.replace("type=application%2Fpdf", "type=image%2Fpng"),  # another type
        url.replace(signature, signature.upper()),  # the same digest, spelled otherwise
        url.replace(f"signature={signature}", "signature="),
        re.sub(r"&signature=[0-9a-f]+", "", url),
    ]
    for address in tampered:
        _refused(_put(client, address, PDF, headers))
    assert not list(storage_root.rglob("medev_*"))
    assert _put(client, url, PDF, headers).status_code == 200  # the real one still works


def test_an_expired_address_is_refused(client, shop, case, monkeypatch):
    ticket = _ticket(client, shop, case)
    monkeypatch.setattr(LocalEvidenceStorage, "now", lambda self: int(time.time()) + 901)
    error = _refused(_put(client, ticket["upload_url"], PDF, ticket["upload_headers"]))
    assert "expired" in error["message"]


def test_a_signature_cannot_be_reused_for_another_object_or_method(client, shop, case):
    first, second = _ticket(client, shop, case), _ticket(client, shop, case)
    first_signature = parse_qs(urlsplit(first["upload_url"]).query)["signature"][0]
    second_signature = parse_qs(urlsplit(second["upload_url"]).query)["signature"][0]
    borrowed = second["upload_url"].replace(second_signature, first_signature)
    _refused(_put(client, borrowed, PDF, second["upload_headers"]))
    parts = urlsplit(first["upload_url"])
    _refused(client.get(f"{parts.path}?{parts.query}"))  # an upload address does not read


def test_a_used_upload_address_cannot_store_again(client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    assert d.put_file(client, ticket, PDF).status_code == 200
    replacement = PDF.replace(b"%%EOF", b"%%EOX")
    assert_error(d.put_file(client, ticket, replacement), 409, "conflict_error", "already_uploaded")
    assert d.complete(client, shop.api_key, case["id"], ticket["id"]).status_code == 200
    assert_error(d.put_file(client, ticket, replacement), 409, "conflict_error", "already_uploaded")
    (stored,) = storage_root.rglob(ticket["id"])
    assert stored.read_bytes() == PDF


@pytest.mark.parametrize(
    "impostor",
    [
        b"<html><script>alert(1)</script></html>",
        b"MZ\x90\x00" + b"\x00" * 60,  # a Windows executable
        SAMPLES["image/png"],  # a real image, but not the PDF that was signed
    ],
)
def test_content_that_is_not_the_signed_type_is_refused_and_not_stored(
    client, shop, case, storage_root, impostor
):
    ticket = _ticket(client, shop, case, body=impostor)
    error = assert_error(
        d.put_file(client, ticket, impostor),
        400,
        "invalid_request_error",
        "content_type_mismatch",
    )
    assert "not application/pdf" in error["message"]
    assert not list(storage_root.rglob("medev_*"))


@pytest.mark.parametrize("content_type", sorted(ALLOWED_TYPES))
def test_each_allowed_type_is_accepted_by_its_own_signature_only(client, shop, case, content_type):
    body = SAMPLES[content_type]
    ticket = _ticket(client, shop, case, body=body, mime_type=content_type)
    assert d.put_file(client, ticket, body).status_code == 200
    for other, sample in SAMPLES.items():
        assert content_matches_type(sample[:12], content_type) is (other == content_type)
