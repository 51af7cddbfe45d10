"""`charge_object`, the plain function behind every single Charge the API and the webhook
events carry, makes exactly what `ChargeSchema`'s marshmallow fields make of the same charge,
in every shape a charge takes."""

from datetime import timedelta

import marshmallow as ma
import sqlalchemy as sa

from app.business_days import sao_paulo_day
from app.extensions import db
from app.formats.charges import ChargeSchema, charge_object
from app.models import Transaction
from app.models.base import utcnow
from tests.support import factories
from tests.support.charges import CPF, created, get, held_for_review, pay, update_row


def _due(**rules) -> dict:
    return {"date": (sao_paulo_day(utcnow()) + timedelta(days=20)).isoformat(), **rules}


def test_every_shape_of_charge_dumps_as_the_schema_fields_would(app, client):
    api_key = factories.make_api_key(app, factories.make_account(app))
    created(client, api_key)
    created(
        client,
        api_key,
        customer={"name": "Ana Souza", "document": CPF, "email": "ana@example.com"},
        metadata={"order": "42", "items": [1, 2], "gift": True},
    )
    paid = created(client, api_key)
    assert pay(client, api_key, paid["id"]).get_json()["status"] == "paid"
    held_for_review(client, api_key)  # payer-locked
    expired = created(client, api_key, expires_in=60)
    update_row(app, expired["id"], expires_at=utcnow() - timedelta(seconds=1))
    assert get(client, api_key, expired["id"]).get_json()["status"] == "expired"
    created(
        client,
        api_key,
        amount=100_000,
        customer={"name": "Ana Souza", "document": CPF},
        due=_due(
            days_valid_after=5,
            fine={"type": "percent", "value": 2},
            interest={"type": "percent_month", "value": 1},
            discounts={"type": "fixed_day", "value": 100},
            rebate={"type": "fixed", "value": 2000},
        ),
    )
    tier = (sao_paulo_day(utcnow()) + timedelta(days=10)).isoformat()
    created(
        client,
        api_key,
        amount=100_000,
        customer={"name": "Ana Souza", "document": CPF},
        due=_due(discounts=[{"until": tier, "type": "percent", "value": 1.5}]),
    )

    schema = ChargeSchema()
    with app.app_context():
        charges = db.session.scalars(sa.select(Transaction)).all()
        assert len(charges) == 7
        for charge in charges:
            by_fields = ma.Schema.dump(schema, charge)
            assert charge_object(charge) == by_fields
            assert schema.dump(charge) == by_fields
            assert get(client, api_key, f"ch_{charge.id}").get_json() == by_fields
        assert {"settlement", "expected_payer_tax_id", "due"} <= {
            key for charge in charges for key, value in charge_object(charge).items() if value
        }
