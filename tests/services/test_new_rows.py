"""`new_rows`: a charge, its events and its daily total change go in with the idempotency
key's answer in one statement, exactly as the ORM's flush would write them, or not at all.
PostgreSQL only: on SQLite the session flushes as it always did."""

import uuid
from datetime import datetime
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from app.errors import Conflict
from app.extensions import db
from app.models import (
    Account,
    Event,
    IdempotencyKey,
    KeyMode,
    PaymentTotalChange,
    Transaction,
    pooled,
)
from app.models.base import utcnow
from app.services import idempotency, new_rows
from app.services.transactions import charges
from tests.support.charges import create, raw
from tests.support.http import count_rows
from tests.support.transactions import open_after

pytestmark = pytest.mark.postgres

# What differs between two charges made from one body: who they are and when.
PER_CHARGE = {
    "id",
    "created_at",
    "updated_at",
    "expires_at",
    "finalised_at",
    "pix_txid",
    "pix_br_code",
    "pix_location_id",
    "pix_expires_at",
    "provider_references",
}
BODY = {
    "amount": 4321,
    "customer": {"name": "Ana Souza", "email": "ana@example.com.br", "phone": "+5511988887777"},
    "metadata": {"order": "A-17", "itens": ["pão", "café"]},
    "expires_in": 900,
}


# A guard built once, as `pooled.write_if` asks.
ANSWER = (
    sa.update(IdempotencyKey.__table__)
    .where(IdempotencyKey.__table__.c.id == sa.bindparam("key_id"))
    .values(response_status=sa.bindparam("answer_status"))
)


def _rows(app, charge_id: str) -> tuple[dict, list[dict]]:
    """The charge's columns, and its events' columns (charge.created first), as loaded."""
    with app.app_context():
        charge = db.session.get(Transaction, charge_id)
        events = db.session.scalars(
            sa.select(Event).where(Event.subject_id == charge_id).order_by(Event.type)
        ).all()
        return _columns(charge), [_columns(event) for event in events]


def _columns(row) -> dict:
    return {prop.key: getattr(row, prop.key) for prop in sa.inspect(type(row)).column_attrs}


def _total_changes(app) -> list[tuple]:
    with app.app_context():
        table = PaymentTotalChange.__table__
        columns = [column for column in table.c if column.name != "id"]
        return [tuple(row) for row in db.session.execute(sa.select(*columns).order_by(table.c.id))]


def test_a_charge_is_written_in_one_statement_in_autocommit(app, client, api_key):
    written, opened = open_after(app, "WITH guarded", lambda: create(client, api_key, **BODY))
    assert written.status_code == 201
    assert opened == [False]
    separately, inserts = open_after(
        app, "INSERT INTO transactions", lambda: create(client, api_key, **BODY)
    )
    assert separately.status_code == 201
    assert inserts == []


def test_the_rows_equal_what_the_flush_writes(app, client, api_key, monkeypatch):
    answer = create(client, api_key, **BODY).get_json()
    one_statement = raw(answer["id"])
    written_changes = _total_changes(app)
    monkeypatch.setattr(new_rows, "writable_alone", lambda session: False)
    flushed = raw(create(client, api_key, **BODY).get_json()["id"])

    (charge, events), (expected, expected_events) = _rows(app, one_statement), _rows(app, flushed)
    assert {key: value for key, value in charge.items() if key not in PER_CHARGE} == {
        key: value for key, value in expected.items() if key not in PER_CHARGE
    }
    assert {key: type(value) for key, value in charge.items()} == {
        key: type(value) for key, value in expected.items()
    }
    assert charge["created_at"] == datetime.fromisoformat(answer["created_at"])  # to the µs
    assert charge["metadata_"] == {**BODY["metadata"], "description": "Pedido 42"}
    assert [event["type"] for event in events] == ["charge.created", "payment.created"]
    for event, expected_event in zip(events, expected_events, strict=True):
        assert event.keys() == expected_event.keys()
        assert event["account_id"] == expected_event["account_id"]
        assert event["mode"] is expected_event["mode"] is KeyMode.TEST
        assert event["data"].keys() == expected_event["data"].keys()
        assert event["created_at"].tzinfo is not None and event["relayed_at"] is None
    assert written_changes == _total_changes(app)[:1]
    assert _total_changes(app)[1] == written_changes[0]


def test_a_request_that_lost_its_claim_writes_none_of_its_rows(app, account_id):
    with app.test_request_context():
        claimed = idempotency.claim(account_id, "test POST /v1/charges", "lost-key-01", "hash")
        db.session.execute(
            sa.update(IdempotencyKey)
            .where(IdempotencyKey.id == claimed.key_id)
            .values(lock_token="token-of-the-retry")
        )
        db.session.commit()
        terms = SimpleNamespace(name="Padaria", city="São Paulo", charge_expires_in=3600)
        charges.create_charge(account_id, KeyMode.TEST, charges.NewCharge(amount=1000), terms=terms)
        assert new_rows.writable_alone(db.session())
        with pytest.raises(Conflict):
            idempotency.complete(claimed, 201, '{"id": "from-the-slow-request"}')
        db.session.rollback()
    assert count_rows(app, Transaction) == count_rows(app, Event) == 0
    assert _total_changes(app) == []


def test_a_session_holding_more_than_new_rows_flushes_as_usual(app, account_id):
    with app.app_context():
        db.session.add(Event(id=f"evt_{uuid.uuid4().hex}", account_id=account_id, type="t"))
        assert new_rows.writable_alone(db.session())
        with db.session.no_autoflush:
            db.session.scalar(sa.select(sa.func.count()).select_from(Transaction))
        assert not new_rows.writable_alone(db.session())  # a transaction is open on a connection
        db.session.rollback()
        account = db.session.get(Account, account_id)
        db.session.commit()
        account.name = "Padaria Nova"
        db.session.add(Event(id=f"evt_{uuid.uuid4().hex}", account_id=account_id, type="t"))
        assert not new_rows.writable_alone(db.session())  # a loaded row changed
        db.session.rollback()


def test_a_row_that_breaks_a_constraint_fails_the_whole_statement(app, account_id):
    event_id = f"evt_{uuid.uuid4().hex}"
    row = {
        "id": event_id,
        "account_id": account_id,
        "mode": KeyMode.TEST,
        "type": "charge.created",
        "api_version": "2026-11-01",
        "subject_type": None,
        "subject_id": None,
        "data": {"n": 1},
        "created_at": utcnow(),
        "relayed_at": None,
    }
    with app.test_request_context():
        claimed = idempotency.claim(account_id, "test POST /v1/charges", "broken-key-1", "hash")
        assert pooled.write_if(
            ANSWER, {"key_id": claimed.key_id, "answer_status": 201}, [(Event.__table__, row)]
        )
        with pytest.raises(sa.exc.IntegrityError):
            pooled.write_if(
                ANSWER,
                {"key_id": claimed.key_id, "answer_status": 202},
                [(Event.__table__, {**row, "data": {"n": 2}})],
            )
        key = db.session.get(IdempotencyKey, claimed.key_id)
        assert key.response_status == 201
        assert db.session.get(Event, event_id).data == {"n": 1}
        assert not pooled.write_if(
            ANSWER,
            {"key_id": "no-such-key", "answer_status": 201},
            [(Event.__table__, {**row, "id": f"evt_{uuid.uuid4().hex}"})],
        )
    assert count_rows(app, Event) == 1
