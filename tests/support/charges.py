"""Creating and moving charges through the real API, as a merchant's server would."""

import uuid
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.extensions import db
from app.models import Event, Transaction

CPF = "52998224725"
OTHER_CPF = "11144477735"
CNPJ = "11222333000181"
ALPHANUMERIC_CNPJ = "12ABC34501DE35"


def charge_body(**overrides) -> dict:
    body = {"amount": 12345, "payment_method": "pix", "description": "Pedido 42"}
    body.update(overrides)
    return body


def create(client, api_key: str, path: str = "/v1/charges", idempotency_key=None, **overrides):
    """POST a charge with a fresh Idempotency-Key unless one is given; returns the response."""
    return client.post(
        path,
        json=charge_body(**overrides),
        headers={"apikey": api_key, "Idempotency-Key": idempotency_key or uuid.uuid4().hex},
    )


def created(client, api_key: str, **overrides) -> dict:
    response = create(client, api_key, **overrides)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def lifetime(charge: dict) -> timedelta:
    """From a charge's creation to its Pix code's expiry, as the API states them."""
    return datetime.fromisoformat(charge["pix"]["expires_at"]) - datetime.fromisoformat(
        charge["created_at"]
    )


def pay(client, api_key: str, charge_id: str, **body):
    return client.post(
        f"/v1/sandbox/charges/{charge_id}/pay", json=body, headers={"apikey": api_key}
    )


def held_for_review(client, api_key: str, name: str = "Ana") -> str:
    """A payer-locked Pix charge paid by a bank that did not say who paid: held for staff."""
    charge = created(client, api_key, customer={"name": name}, expected_payer_tax_id=CPF)
    paid = pay(client, api_key, charge["id"], payer_document=None)
    assert paid.get_json()["status"] == "processing", paid.get_json()
    return charge["id"]


def get(client, api_key: str, charge_id: str):
    return client.get(f"/v1/charges/{charge_id}", headers={"apikey": api_key})


def raw(charge_id: str) -> str:
    return charge_id.removeprefix("ch_")


def update_row(app, charge_id: str, **values) -> None:
    """Move a charge's clock or state behind the API's back (expiry, windows, ordering)."""
    with app.app_context():
        db.session.execute(
            sa.update(Transaction).where(Transaction.id == raw(charge_id)).values(**values)
        )
        db.session.commit()


def event_types(app, charge_id: str) -> list[str]:
    with app.app_context():
        return db.session.scalars(
            sa.select(Event.type)
            .where(Event.subject_id == raw(charge_id))
            .order_by(Event.created_at, Event.type)
        ).all()


def events(app, charge_id: str) -> dict[str, dict]:
    with app.app_context():
        rows = db.session.scalars(sa.select(Event).where(Event.subject_id == raw(charge_id)))
        return {event.type: event.data for event in rows}
