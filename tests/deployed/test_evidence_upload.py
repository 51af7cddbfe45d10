"""Dispute evidence through the deployed web process: gunicorn terminates request bodies
itself (`wsgi.input_terminated`), so the signed PUT is read as gunicorn hands it over."""

import uuid

import pytest

from tests.support.charges import charge_body
from tests.support.refunds import release

pytestmark = pytest.mark.slow

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF"


def _post(deployed_web, api_key: str, path: str, **body) -> dict:
    response = deployed_web.request(
        "POST", path, json=body, headers={"apikey": api_key, "Idempotency-Key": uuid.uuid4().hex}
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture
def case(app, deployed_web, api_key) -> dict:
    """An open dispute on a charge paid in the sandbox, created through the web process."""
    charge = _post(deployed_web, api_key, "/v1/charges", **charge_body())
    _post(deployed_web, api_key, f"/v1/sandbox/charges/{charge['id']}/pay")
    release(app)
    return _post(deployed_web, api_key, f"/v1/sandbox/charges/{charge['id']}/dispute")


def _ticket(deployed_web, api_key: str, case: dict, body: bytes) -> dict:
    return _post(
        deployed_web,
        api_key,
        f"/v1/med/cases/{case['id']}/evidence",
        file_name="receipt.pdf",
        file_size=len(body),
        mime_type="application/pdf",
    )


def test_exactly_the_signed_bytes_are_stored_and_confirmed(deployed_web, api_key, case):
    ticket = _ticket(deployed_web, api_key, case, PDF)

    stored = deployed_web.request(
        "PUT", deployed_web.path(ticket["upload_url"]), data=PDF, headers=ticket["upload_headers"]
    )

    assert stored.status_code == 200, stored.text
    assert stored.json() == {"stored": True, "size": len(PDF)}
    completed = _post(
        deployed_web, api_key, f"/v1/med/cases/{case['id']}/evidence/{ticket['id']}/complete"
    )
    assert completed["id"] == ticket["id"]


@pytest.mark.parametrize(
    ("body", "status"), [(PDF + b"x", 413), (PDF[:-1], 400)], ids=["longer", "shorter"]
)
def test_a_body_of_another_length_is_refused(deployed_web, api_key, case, body, status):
    ticket = _ticket(deployed_web, api_key, case, PDF)
    headers = ticket["upload_headers"] | {"Content-Length": str(len(body))}

    refused = deployed_web.request(
        "PUT", deployed_web.path(ticket["upload_url"]), data=body, headers=headers
    )

    assert refused.status_code == status, refused.text
    assert refused.json()["error"]["code"] == "content_length_mismatch"


def test_a_chunked_body_is_refused(deployed_web, api_key, case):
    """No Content-Length: the signed length cannot be checked before reading."""
    ticket = _ticket(deployed_web, api_key, case, PDF)
    chunks = iter([PDF[:100], PDF[100:]])  # a generator body is sent chunked

    refused = deployed_web.request(
        "PUT",
        deployed_web.path(ticket["upload_url"]),
        data=chunks,
        headers={"Content-Type": "application/pdf"},
    )

    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "content_length_mismatch"
