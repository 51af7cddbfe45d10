"""Dispute evidence through the deployed stack: gunicorn terminates request bodies itself
(`wsgi.input_terminated`), so the signed PUT is read as gunicorn hands it over, and the signed
view address gives back exactly what was stored."""

import pytest

from tests.support.charges import charge_body

pytestmark = pytest.mark.slow

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF"


def _post(deployed, path: str, **body) -> dict:
    response = deployed.api("POST", path, json=body)
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture
def case(deployed) -> dict:
    """An open dispute on a charge of the demo merchant paid in the sandbox."""
    charge = _post(deployed, "/v1/charges", **charge_body())
    _post(deployed, f"/v1/sandbox/charges/{charge['id']}/pay")
    return _post(deployed, f"/v1/sandbox/charges/{charge['id']}/dispute")


def _ticket(deployed, case: dict, body: bytes) -> dict:
    return _post(
        deployed,
        f"/v1/med/cases/{case['id']}/evidence",
        file_name="receipt.pdf",
        file_size=len(body),
        mime_type="application/pdf",
    )


def test_exactly_the_signed_bytes_are_stored_confirmed_and_viewed(deployed, case):
    ticket = _ticket(deployed, case, PDF)

    stored = deployed.request(
        "PUT", deployed.path(ticket["upload_url"]), data=PDF, headers=ticket["upload_headers"]
    )

    assert stored.status_code == 200, stored.text
    assert stored.json() == {"stored": True, "size": len(PDF)}
    completed = _post(deployed, f"/v1/med/cases/{case['id']}/evidence/{ticket['id']}/complete")
    assert completed["id"] == ticket["id"]
    listed = deployed.api("GET", f"/v1/med/cases/{case['id']}/evidence")
    assert listed.status_code == 200, listed.text
    [evidence] = listed.json()["data"]
    viewed = deployed.request("GET", deployed.path(evidence["view_url"]))
    assert viewed.status_code == 200, viewed.text
    assert viewed.content == PDF


@pytest.mark.parametrize(
    ("body", "status"), [(PDF + b"x", 413), (PDF[:-1], 400)], ids=["longer", "shorter"]
)
def test_a_body_of_another_length_is_refused(deployed, case, body, status):
    ticket = _ticket(deployed, case, PDF)
    headers = ticket["upload_headers"] | {"Content-Length": str(len(body))}

    refused = deployed.request(
        "PUT", deployed.path(ticket["upload_url"]), data=body, headers=headers
    )

    assert refused.status_code == status, refused.text
    assert refused.json()["error"]["code"] == "content_length_mismatch"


def test_a_chunked_body_is_refused(deployed, case):
    """No Content-Length: the signed length cannot be checked before reading."""
    ticket = _ticket(deployed, case, PDF)
    chunks = iter([PDF[:100], PDF[100:]])  # a generator body is sent chunked

    refused = deployed.request(
        "PUT",
        deployed.path(ticket["upload_url"]),
        data=chunks,
        headers={"Content-Type": "application/pdf"},
    )

    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "content_length_mismatch"
