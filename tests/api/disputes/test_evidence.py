"""Dispute evidence in three steps through real HTTP: the ticket, the PUT to the signed address
with no API credentials (refused for any other type or size, or an expired or tampered
address), and the completion (idempotent, 409 when nothing or something else arrived), with
unconfirmed evidence invisible and uncounted and the storage's outage a 503."""

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from app.storage import MAX_EVIDENCE_BYTES, StorageUnavailable, evidence_storage
from app.storage.local import LocalEvidenceStorage
from app.storage.signing import Grant
from tests.support import disputes as d

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _ticket(client, shop, case, body=PDF, **extra) -> dict:
    response = d.ticket(client, shop.api_key, case["id"], body, **extra)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _case(client, shop, case) -> dict:
    return d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()


def _listed(client, shop, case) -> list[dict]:
    response = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}/evidence")
    assert response.status_code == 200
    body = response.get_json()
    assert body["object"] == "list"
    return body["data"]


def _target(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.get_json()
    assert response.get_json()["error"]["code"] == code
    return response.get_json()["error"]


def test_the_three_steps_store_and_confirm_the_file(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    assert ticket["id"].startswith("medev_")
    assert ticket["object"] == "med_case_evidence_upload"
    assert (ticket["upload_method"], ticket["expires_in"]) == ("PUT", 900)
    assert ticket["upload_headers"] == {
        "Content-Type": "application/pdf",
        "Content-Length": str(len(PDF)),
    }

    stored = d.put_file(client, ticket, PDF)  # no apikey, no Authorization, no cookie
    assert stored.status_code == 200, stored.get_json()
    response = d.complete(client, shop.api_key, case["id"], ticket["id"])
    assert response.status_code == 200
    evidence = response.get_json()
    assert evidence["id"] == ticket["id"] and evidence["object"] == "med_case_evidence"
    assert (evidence["file_name"], evidence["file_size"], evidence["mime_type"]) == (
        "receipt.pdf",
        len(PDF),
        "application/pdf",
    )
    assert evidence["uploaded_by"] == "merchant"
    assert evidence["created_at"] and evidence["uploaded_at"]
    assert _case(client, shop, case)["evidence_count"] == 1
    assert [item["id"] for item in _listed(client, shop, case)] == [ticket["id"]]

    view = client.get(_target(evidence["view_url"]))
    assert view.status_code == 200 and view.data == PDF
    assert view.headers["Content-Type"] == "application/pdf"
    expires = int(parse_qs(urlsplit(evidence["view_url"]).query)["expires"][0])
    assert 295 <= expires - time.time() <= 300


def test_complete_is_idempotent(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    d.put_file(client, ticket, PDF)
    first = d.complete(client, shop.api_key, case["id"], ticket["id"]).get_json()
    again = d.complete(client, shop.api_key, case["id"], ticket["id"])
    assert again.status_code == 200
    second = again.get_json()
    assert {k: v for k, v in second.items() if k != "view_url"} == {
        k: v for k, v in first.items() if k != "view_url"
    }
    assert _case(client, shop, case)["evidence_count"] == 1


def test_unconfirmed_evidence_is_invisible_and_uncounted(app, client, shop, case):
    _ticket(client, shop, case)  # never uploaded
    uploaded = _ticket(client, shop, case)
    d.put_file(client, uploaded, PDF)  # uploaded but never completed
    assert _listed(client, shop, case) == []
    assert _case(client, shop, case)["evidence_count"] == 0
    listed = d.call(client, shop.api_key, "GET", "/v1/med/cases").get_json()["data"]
    assert listed[0]["evidence_count"] == 0


def test_evidence_is_listed_newest_first(app, client, shop, case):
    ids = []
    for body in (PDF, PNG):
        mime = "application/pdf" if body is PDF else "image/png"
        ticket = _ticket(client, shop, case, body, mime_type=mime)
        d.put_file(client, ticket, body)
        d.complete(client, shop.api_key, case["id"], ticket["id"])
        ids.append(ticket["id"])
        time.sleep(0.01)
    assert [item["id"] for item in _listed(client, shop, case)] == list(reversed(ids))


def test_complete_before_the_upload_is_409(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    _error(d.complete(client, shop.api_key, case["id"], ticket["id"]), 409, "EVIDENCE_NOT_UPLOADED")
    d.put_file(client, ticket, PDF)  # the address still works afterwards
    assert d.complete(client, shop.api_key, case["id"], ticket["id"]).status_code == 200


def test_complete_after_the_address_expired_is_409(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    d.update_evidence(app, ticket["id"], upload_expires_at=d.past(seconds=1))
    error = _error(
        d.complete(client, shop.api_key, case["id"], ticket["id"]), 409, "EVIDENCE_NOT_UPLOADED"
    )
    assert "expired" in error["message"]


def test_a_stored_file_of_another_size_is_409(app, client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    # A backend that did not enforce the signed length (the local one does): write directly.
    target = storage_root / "evidence" / case["id"] / ticket["id"]
    target.parent.mkdir(parents=True)
    target.write_bytes(PDF[:-1])
    _error(
        d.complete(client, shop.api_key, case["id"], ticket["id"]), 409, "EVIDENCE_SIZE_MISMATCH"
    )
    assert _listed(client, shop, case) == []


def test_a_stored_file_of_another_type_is_409(app, client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    # A store written to directly (S3) never checked the bytes: HTML under a PDF ticket.
    target = storage_root / "evidence" / case["id"] / ticket["id"]
    target.parent.mkdir(parents=True)
    target.write_bytes(b"<html>" + PDF[6:])
    _error(
        d.complete(client, shop.api_key, case["id"], ticket["id"]), 409, "EVIDENCE_TYPE_MISMATCH"
    )
    assert _listed(client, shop, case) == []


def test_the_storage_refuses_another_type_or_size(app, client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    wrong_type = dict(ticket["upload_headers"], **{"Content-Type": "image/png"})
    _error(d.put_file(client, ticket, PDF, headers=wrong_type), 400, "content_type_mismatch")
    longer = PDF + b"x"
    headers = dict(ticket["upload_headers"], **{"Content-Length": str(len(longer))})
    assert d.put_file(client, ticket, longer, headers=headers).status_code == 413
    shorter = PDF[:-1]
    headers = dict(ticket["upload_headers"], **{"Content-Length": str(len(shorter))})
    _error(d.put_file(client, ticket, shorter, headers=headers), 400, "content_length_mismatch")
    assert not list(storage_root.rglob("medev_*"))
    _error(d.complete(client, shop.api_key, case["id"], ticket["id"]), 409, "EVIDENCE_NOT_UPLOADED")


def test_the_storage_refuses_tampered_and_expired_addresses(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    url = ticket["upload_url"]
    tampered_length = re.sub(r"length=\d+", f"length={len(PDF) + 1}", url)
    headers = dict(ticket["upload_headers"], **{"Content-Length": str(len(PDF) + 1)})
    response = client.put(_target(tampered_length), data=PDF + b"x", headers=headers)
    _error(response, 403, "invalid_signature")
    signature = parse_qs(urlsplit(url).query)["signature"][0]
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    bad_signature = url.replace(signature, flipped)
    _error(
        client.put(_target(bad_signature), data=PDF, headers=ticket["upload_headers"]),
        403,
        "invalid_signature",
    )
    other_key = url.replace(ticket["id"], f"{ticket['id']}x")
    _error(
        client.put(_target(other_key), data=PDF, headers=ticket["upload_headers"]),
        403,
        "invalid_signature",
    )

    with app.app_context():
        storage = evidence_storage()
        key = f"evidence/{case['id']}/{ticket['id']}"
        expired = storage.address(
            Grant(
                method="PUT",
                key=key,
                expires_at=int(time.time()) - 1,
                content_type="application/pdf",
                content_length=len(PDF),
            )
        )
    _error(
        client.put(_target(expired), data=PDF, headers=ticket["upload_headers"]),
        403,
        "invalid_signature",
    )
    assert client.get(_target(url)).status_code == 403  # a PUT address does not read


def test_api_credentials_are_not_needed_and_not_a_substitute(app, client, shop, case):
    ticket = _ticket(client, shop, case)
    bare = urlsplit(ticket["upload_url"]).path
    response = client.put(
        bare, data=PDF, headers={**ticket["upload_headers"], "apikey": shop.api_key}
    )
    _error(response, 403, "invalid_signature")
    assert d.put_file(client, ticket, PDF).status_code == 200


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"file_size": 0}, "file_size"),
        ({"file_size": MAX_EVIDENCE_BYTES + 1}, "file_size"),
        ({"file_size": "10"}, "file_size"),
        ({"file_size": 1.5}, "file_size"),
        ({"mime_type": "text/plain"}, "mime_type"),
        ({"mime_type": "application/PDF"}, "mime_type"),
        ({"file_name": ""}, "file_name"),
        ({"file_name": "../etc/passwd"}, "file_name"),
        ({"file_name": "a\nb.pdf"}, "file_name"),
        ({"file_name": "x" * 256}, "file_name"),
        ({"file_name": "\u202efdp.exe"}, "file_name"),
        ({"file_name": "nf\u0085.pdf"}, "file_name"),
        ({"file_name": "nf\u2028.pdf"}, "file_name"),
    ],
)
def test_ticket_input_errors_are_400(app, client, shop, case, body, param):
    payload = {"file_name": "nf.pdf", "file_size": 100, "mime_type": "application/pdf"} | body
    response = client.post(
        f"/v1/med/cases/{case['id']}/evidence", json=payload, headers={"apikey": shop.api_key}
    )
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    params = {detail["param"] for detail in error.get("details") or []} | {error.get("param")}
    assert param in params


def test_confirmed_evidence_cannot_be_replaced(app, client, shop, case, storage_root):
    ticket = _ticket(client, shop, case)
    d.put_file(client, ticket, PDF)
    d.complete(client, shop.api_key, case["id"], ticket["id"])
    forged = bytes(reversed(PDF))
    _error(d.put_file(client, ticket, forged), 409, "already_uploaded")
    (evidence,) = _listed(client, shop, case)
    assert client.get(_target(evidence["view_url"])).data == PDF


def test_a_non_ascii_file_name_is_kept(app, client, shop, case):
    ticket = _ticket(client, shop, case, file_name="Nota fiscal nº 42 — São Paulo.pdf")
    d.put_file(client, ticket, PDF)
    body = d.complete(client, shop.api_key, case["id"], ticket["id"]).get_json()
    assert body["file_name"] == "Nota fiscal nº 42 — São Paulo.pdf"


def test_missing_ticket_fields_are_400(app, client, shop, case):
    response = client.post(
        f"/v1/med/cases/{case['id']}/evidence", json={}, headers={"apikey": shop.api_key}
    )
    assert response.status_code == 400
    params = {detail["param"] for detail in response.get_json()["error"]["details"]}
    assert params == {"file_name", "file_size", "mime_type"}


def test_the_largest_file_is_allowed(app, client, shop, case):
    response = d.ticket(client, shop.api_key, case["id"], b"", file_size=MAX_EVIDENCE_BYTES)
    assert response.status_code == 201


def test_no_ticket_for_a_decided_case(app, client, shop, case):
    d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case['id']}/accept")
    _error(d.ticket(client, shop.api_key, case["id"], PDF), 409, "med_case_not_open")


def test_evidence_can_be_attached_after_appealing(app, client, shop, case):
    path = f"/v1/med/cases/{case['id']}/appeal"
    d.call(client, shop.api_key, "POST", path, json={"reason": "Ver anexos"})
    ticket = _ticket(client, shop, case)
    d.put_file(client, ticket, PDF)
    assert d.complete(client, shop.api_key, case["id"], ticket["id"]).status_code == 200


def test_storage_down_is_503(app, client, shop, case, storage_root, monkeypatch):
    ticket = _ticket(client, shop, case)
    storage_root.rmdir()  # empty: nothing was uploaded yet
    storage_root.write_text("not a directory")  # the storage's volume is gone
    _error(d.ticket(client, shop.api_key, case["id"], PDF), 503, "service_unavailable")
    _error(d.put_file(client, ticket, PDF), 503, "service_unavailable")

    def unreadable(self, key):
        raise StorageUnavailable("The evidence storage cannot be read.")

    monkeypatch.setattr(LocalEvidenceStorage, "stored_size", unreadable)
    _error(d.complete(client, shop.api_key, case["id"], ticket["id"]), 503, "service_unavailable")
