"""A merchant with a paid charge to dispute, and the calls a dispute case goes through: the
sandbox's dispute channel, the case routes, and the three-step evidence upload."""

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import sqlalchemy as sa

from app.extensions import db
from app.models import DisputeCase, DisputeEvidence, Event
from tests.support import charges
from tests.support.refunds import Merchant, release
from tests.support.rows import update_row

AMOUNT = 12345


def paid_charge(app, client, merchant: Merchant, amount: int = AMOUNT, released=True) -> dict:
    """A Pix charge paid in the sandbox, its money released to available unless told not to."""
    charge = charges.created(client, merchant.api_key, amount=amount)
    assert charges.pay(client, merchant.api_key, charge["id"]).status_code == 200
    if released:
        release(app)
    return charges.get(client, merchant.api_key, charge["id"]).get_json()


def dispute(client, api_key: str, charge_id: str, **body):
    return client.post(
        f"/v1/sandbox/charges/{charge_id}/dispute", json=body, headers={"apikey": api_key}
    )


def opened(client, merchant: Merchant, charge_id: str, **body) -> dict:
    response = dispute(client, merchant.api_key, charge_id, **body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def decide(client, api_key: str, case_id: str, decision: str):
    return client.post(
        f"/v1/sandbox/med/cases/{case_id}/decision",
        json={"decision": decision},
        headers={"apikey": api_key},
    )


def call(client, api_key: str, method: str, path: str, **kwargs):
    return client.open(path, method=method, headers={"apikey": api_key}, **kwargs)


def ticket(client, api_key: str, case_id: str, body: bytes, mime_type="application/pdf", **extra):
    payload = {"file_name": "receipt.pdf", "file_size": len(body), "mime_type": mime_type}
    payload.update(extra)
    return client.post(
        f"/v1/med/cases/{case_id}/evidence", json=payload, headers={"apikey": api_key}
    )


def put_file(client, ticket_body: dict, body: bytes, headers: dict | None = None):
    """PUT to the signed address exactly as a client would: its headers, no credentials."""
    parts = urlsplit(ticket_body["upload_url"])
    return client.put(
        f"{parts.path}?{parts.query}",
        data=body,
        headers=ticket_body["upload_headers"] if headers is None else headers,
    )


def complete(client, api_key: str, case_id: str, evidence_id: str):
    return client.post(
        f"/v1/med/cases/{case_id}/evidence/{evidence_id}/complete", headers={"apikey": api_key}
    )


def case_events(app, case_id: str) -> list[tuple[str, dict]]:
    with app.app_context():
        rows = db.session.scalars(
            sa.select(Event).where(Event.subject_id == case_id).order_by(Event.created_at, Event.id)
        )
        return [(event.type, event.data) for event in rows]


def case_row(app, case_id: str) -> DisputeCase:
    with app.app_context():
        row = db.session.get(DisputeCase, case_id)
        db.session.expunge(row)
        return row


def update_case(app, case_id: str, **values) -> None:
    update_row(app, DisputeCase, case_id, **values)


def update_evidence(app, evidence_id: str, **values) -> None:
    update_row(app, DisputeEvidence, evidence_id, **values)


def past(**delta) -> datetime:
    return datetime.now(UTC) - timedelta(**delta)
