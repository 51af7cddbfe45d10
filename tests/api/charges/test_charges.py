"""POST/GET /v1/charges and /v1/pix/charges: the contract's body rules, shape and allowlist."""

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import Account, Event, IdempotencyKey, KeyMode, Transaction
from app.pix import brcode
from app.pix.identifiers import TXID_PATTERN
from tests.support import factories
from tests.support.charges import (
    ALPHANUMERIC_CNPJ,
    CNPJ,
    CPF,
    OTHER_CPF,
    charge_body,
    create,
    created,
    event_types,
    events,
    get,
    raw,
    update_row,
)
from tests.support.http import assert_error, count_rows
from tests.support.transactions import commits_during, open_after

CHARGE_KEYS = {
    "id",
    "object",
    "amount",
    "currency",
    "status",
    "payment_method",
    "customer",
    "pix",
    "checkout_url",
    "settlement",
    "metadata",
    "created_at",
}
FORBIDDEN_KEYS = {
    "account_id",
    "accountId",
    "provider",
    "provider_fee",
    "providerFee",
    "platform_fee",
    "platformFee",
    "fee",
    "fees",
    "cost",
    "net_amount",
    "raw",
    "raw_payload",
    "payload",
    "location_id",
    "pix_location_id",
    "payer_document",
    "origin",
    "mode",
    "internal_id",
}


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_create_returns_the_public_charge_with_code_qr_and_checkout(app, client, api_key):
    """Does a new charge come back pending with a valid dynamic BR Code, QR and checkout?"""
    response = create(
        client,
        api_key,
        customer={"name": "Ana Souza", "document": "529.982.247-25", "email": "ana@example.com"},
        metadata={"order": "42", "_secret": "x", "failure": "y", "med": 1},
    )
    assert response.status_code == 201
    charge = response.get_json()
    assert set(charge) == CHARGE_KEYS
    assert charge["id"].startswith("ch_")
    assert charge["object"] == "charge"
    assert charge["status"] == "pending"
    assert (charge["amount"], charge["currency"], charge["payment_method"]) == (12345, "BRL", "pix")
    assert charge["customer"] == {
        "name": "Ana Souza",
        "document": CPF,
        "email": "ana@example.com",
        "phone": None,
    }
    assert charge["settlement"] == {}
    assert charge["metadata"] == {"order": "42", "description": "Pedido 42"}
    pix = charge["pix"]
    assert TXID_PATTERN.fullmatch(pix["txid"])
    assert pix["txid"] not in charge["id"]
    lifetime = _parse_time(pix["expires_at"]) - _parse_time(charge["created_at"])
    assert abs(lifetime - timedelta(seconds=3600)) < timedelta(seconds=2)

    code = brcode.parse(pix["br_code"])
    assert code.is_dynamic and code.single_use
    assert code.txid == "***"
    assert code.amount_cents == 12345
    assert code.merchant_name == "Padaria Sao Joao"
    assert code.location.startswith("localhost/v1/qr/")
    checkout = urlsplit(charge["checkout_url"])
    assert checkout.path == f"/checkout/{raw(charge['id'])}"

    image = client.get(urlsplit(pix["qr_code_url"]).path)
    assert image.status_code == 200
    assert image.mimetype == "image/png"
    assert image.data.startswith(b"\x89PNG")
    assert image.headers["Cache-Control"] == "public, max-age=86400, immutable"
    assert response.headers["Cache-Control"] == "no-store"

    assert sorted(event_types(app, charge["id"])) == ["charge.created", "payment.created"]
    recorded = events(app, charge["id"])
    assert recorded["charge.created"] == {"object": charge}
    assert recorded["payment.created"]["transactionId"] == charge["id"]
    assert recorded["payment.created"]["status"] == "WAITING_PAYMENT"
    assert recorded["payment.created"]["previousStatus"] is None


def test_location_serves_the_charge_payload_behind_the_dynamic_code(client, api_key):
    """Can a payer's bank read txid, amount, expiry, receiver and status at the location?"""
    charge = created(client, api_key, expires_in=600)
    location = brcode.parse(charge["pix"]["br_code"]).location
    payload = client.get(location.removeprefix("localhost")).get_json()
    assert payload["txid"] == charge["pix"]["txid"]
    assert payload["valor"] == {"original": "123.45"}
    assert payload["calendario"]["expiracao"] == 600
    assert payload["recebedor"] == {"nome": "Padaria São João", "cidade": "Sao Paulo"}
    assert payload["status"] == "ATIVA"
    assert client.get("/v1/pix/locations/unknown").status_code == 404


def test_pix_shortcut_fixes_the_payment_method(client, api_key):
    body = charge_body()
    del body["payment_method"]
    response = client.post(
        "/v1/pix/charges", json=body, headers={"apikey": api_key, "Idempotency-Key": "shortcut-1"}
    )
    assert response.status_code == 201
    assert response.get_json()["payment_method"] == "pix"
    assert response.get_json()["status"] == "pending"
    refused = create(client, api_key, path="/v1/pix/charges", payment_method="card")
    assert_error(refused, 400, "invalid_request_error", "invalid_request", param="payment_method")


LONG = "x" * 501


@pytest.mark.parametrize(
    ("overrides", "code", "param"),
    [
        ({"amount": 0}, "invalid_amount", "amount"),
        ({"amount": -5}, "invalid_amount", "amount"),
        ({"amount": 10.5}, "invalid_amount", "amount"),
        ({"amount": "1000"}, "invalid_amount", "amount"),
        ({"amount": True}, "invalid_amount", "amount"),
        ({"amount": None}, "invalid_amount", "amount"),
        ({"amount": 1_000_000_000_000}, "invalid_amount", "amount"),
        ({"currency": "USD"}, "invalid_request", "currency"),
        ({"payment_method": "card"}, "invalid_request", "payment_method"),
        ({"payment_method": None}, "invalid_request", "payment_method"),
        ({"description": LONG}, "invalid_request", "description"),
        ({"expires_in": 59}, "invalid_request", "expires_in"),
        ({"expires_in": "3600"}, "invalid_request", "expires_in"),
        ({"customer": "Ana"}, "invalid_request", "customer"),
        ({"customer": {"document": "52998224724"}}, "invalid_request", "customer.document"),
        ({"customer": {"document": "11111111111"}}, "invalid_request", "customer.document"),
        ({"customer": {"email": "not-an-email"}}, "invalid_request", "customer.email"),
        ({"customer": {"phone": "11 98765-4321"}}, "invalid_request", "customer.phone"),
        ({"customer": {"nickname": "A"}}, "invalid_request", "customer.nickname"),
        (
            {"customer": {"name": "Ana"}, "expected_payer_tax_id": "12345678900"},
            "invalid_request",
            "expected_payer_tax_id",
        ),
        (
            {"customer": {"name": "Ana"}, "expected_payer_tax_id": "12abc34501de35"},
            "invalid_request",
            "expected_payer_tax_id",
        ),
        ({"expected_payer_tax_id": CPF}, "invalid_request", "customer.name"),
        (
            {"customer": {"name": "  "}, "expected_payer_tax_id": CPF},
            "invalid_request",
            "customer.name",
        ),
        (
            {"customer": {"name": "Ana", "document": CNPJ}, "expected_payer_tax_id": CPF},
            "invalid_request",
            "expected_payer_tax_id",
        ),
        ({"metadata": ["a"]}, "invalid_request", "metadata"),
        ({"metadata": {f"k{i}": i for i in range(51)}}, "invalid_request", "metadata"),
        ({"metadata": {"k" * 41: 1}}, "invalid_request", "metadata"),
        ({"metadata": {"big": "x" * 9000}}, "invalid_request", "metadata"),
        ({"surprise": 1}, "invalid_request", "surprise"),
    ],
)
def test_each_body_rule_is_a_400_naming_the_field(app, client, api_key, overrides, code, param):
    """Does every broken rule answer 400 with error.param, and create nothing?"""
    response = create(client, api_key, **overrides)
    error = assert_error(response, 400, "invalid_request_error", code, param=param)
    assert error["message"]
    assert count_rows(app, Transaction) == 0
    assert count_rows(app, IdempotencyKey) == 0


def test_missing_amount_and_payment_method_are_each_listed(client, api_key):
    response = client.post(
        "/v1/charges", json={}, headers={"apikey": api_key, "Idempotency-Key": "empty-body"}
    )
    error = assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert {d["param"] for d in error["details"]} == {"amount", "payment_method"}


@pytest.mark.parametrize("key", [None, "", "short", "k" * 129])
def test_idempotency_key_header_is_required_with_8_to_128_characters(app, client, api_key, key):
    headers = {"apikey": api_key}
    if key is not None:
        headers["Idempotency-Key"] = key
    response = client.post("/v1/charges", json=charge_body(), headers=headers)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="Idempotency-Key")
    assert count_rows(app, Transaction) == 0


def test_payer_lock_accepts_cpf_cnpj_and_the_alphanumeric_cnpj(client, api_key):
    for document in (CPF, CNPJ, ALPHANUMERIC_CNPJ, "12.ABC.345/01DE-35"):
        charge = created(
            client,
            api_key,
            customer={"name": "Empresa", "document": document},
            expected_payer_tax_id=document,
        )
        assert charge["expected_payer_tax_id"] == document.replace(".", "").replace(
            "/", ""
        ).replace("-", "")
    assert "expected_payer_tax_id" not in created(client, api_key)


def test_expires_in_is_capped_and_defaults_to_the_account_window(app, client, account_id, api_key):
    capped = created(client, api_key, expires_in=200_000)
    lifetime = _parse_time(capped["pix"]["expires_at"]) - _parse_time(capped["created_at"])
    assert abs(lifetime - timedelta(days=1)) < timedelta(seconds=2)

    with app.app_context():
        db.session.get(Account, account_id).charge_expires_in = 900
        db.session.commit()
    default = created(client, api_key)
    lifetime = _parse_time(default["pix"]["expires_at"]) - _parse_time(default["created_at"])
    assert abs(lifetime - timedelta(seconds=900)) < timedelta(seconds=2)


def test_lowercase_currency_is_read_as_brl(client, api_key):
    assert created(client, api_key, currency="brl")["currency"] == "BRL"


def test_a_replay_returns_the_same_charge_and_a_different_body_conflicts(app, client, api_key):
    first = create(client, api_key, idempotency_key="order-42-attempt")
    replay = create(client, api_key, idempotency_key="order-42-attempt")
    assert replay.status_code == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.get_json() == first.get_json()
    other = create(client, api_key, idempotency_key="order-42-attempt", amount=999)
    assert_error(other, 409, "conflict_error", "idempotency_key_reused")
    assert count_rows(app, Transaction) == 1


def test_live_keys_without_a_live_provider_get_422_and_nothing_is_created(app, client, account_id):
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    response = create(client, live_key)
    assert_error(response, 422, "invalid_request_error", "unprocessable_entity")
    assert count_rows(app, Transaction) == 0
    assert count_rows(app, Event) == 0


def test_get_accepts_the_ch_id_or_the_raw_id_in_the_callers_account_only(
    app, client, account_id, api_key
):
    charge = created(client, api_key)
    assert get(client, api_key, charge["id"]).get_json() == charge
    assert get(client, api_key, raw(charge["id"])).get_json() == charge

    stranger = factories.make_api_key(app, factories.make_account(app, "Other"))
    assert_error(get(client, stranger, charge["id"]), 404, "not_found_error", "not_found")
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    assert_error(get(client, live_key, charge["id"]), 404, "not_found_error", "not_found")
    assert_error(get(client, api_key, "ch_nope"), 404, "not_found_error", "not_found")
    assert_error(
        client.get(f"/v1/charges/{charge['id']}"), 401, "authentication_error", "unauthorized"
    )


def test_a_read_by_id_runs_outside_a_transaction_until_it_must_expire_the_charge(
    app, client, api_key
):
    """The read is one SELECT in autocommit, with no BEGIN and COMMIT round trips around it
    and no session commit after it (issue 22); a charge it finds overdue is expired in a
    transaction, committed with its event."""
    charge = created(client, api_key, expires_in=60)
    read = f"SELECT {Transaction.__tablename__}.id, "
    (response, opened), commits = commits_during(
        lambda: open_after(app, read, lambda: get(client, api_key, charge["id"]))
    )
    assert response.get_json() == charge
    assert opened == [False]
    assert commits == 0

    update_row(app, charge["id"], expires_at=datetime.now(UTC) - timedelta(seconds=1))
    write = f"UPDATE {Transaction.__tablename__} "
    (response, opened), commits = commits_during(
        lambda: open_after(app, write, lambda: get(client, api_key, charge["id"]))
    )
    assert response.get_json()["status"] == "expired"
    assert opened and all(opened)
    assert commits == 1
    assert get(client, api_key, charge["id"]).get_json() == response.get_json()
    assert event_types(app, charge["id"]).count("charge.expired") == 1


def _walk(value, path="$"):
    if isinstance(value, dict):
        for key, child in value.items():
            yield path, key, child
            yield from _walk(child, f"{path}.{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, f"{path}[{index}]")


def test_no_private_field_appears_in_any_charge_response(app, client, account_id, api_key):
    """Walking every key and value: no internal id, provider, fee, cost or raw payload."""
    locked = created(
        client,
        api_key,
        customer={"name": "Ana", "document": CPF},
        expected_payer_tax_id=CPF,
    )
    paid = client.post(
        f"/v1/sandbox/charges/{locked['id']}/pay", json={}, headers={"apikey": api_key}
    ).get_json()
    failed = created(client, api_key, amount=50_300)
    with app.app_context():
        private_values = set(
            db.session.execute(
                sa.select(Transaction.pix_location_id, Transaction.provider).where(
                    Transaction.id == raw(locked["id"])
                )
            ).one()
        ) | {account_id}
    answers = [
        locked,
        paid,
        failed,
        get(client, api_key, locked["id"]).get_json(),
        client.get("/v1/charges", headers={"apikey": api_key}).get_json(),
    ]
    for answer in answers:
        for path, key, value in _walk(answer):
            assert key not in FORBIDDEN_KEYS, f"{path}.{key}"
            if isinstance(value, str) and key not in {"br_code", "qr_code_url"}:
                assert value not in private_values, f"{path}.{key}"
    for charge in (locked, paid, failed):
        assert set(charge) <= CHARGE_KEYS | {"expected_payer_tax_id"}
    assert set(paid["settlement"]) == {"end_to_end_id"}


@pytest.mark.postgres
def test_twenty_concurrent_creates_with_one_key_make_one_charge(app, api_key):
    def send(_):
        with app.test_client() as client:
            response = create(client, api_key, idempotency_key="race-charge-0001")
            return response.status_code, response.get_json()

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(send, range(20)))
    created_ids = {body["id"] for status, body in results if status == 201}
    conflicts = [body for status, body in results if status == 409]
    assert len(created_ids) == 1
    assert all(b["error"]["code"] == "idempotency_request_in_progress" for b in conflicts)
    assert count_rows(app, Transaction) == 1
    with app.app_context():
        created_events = db.session.scalar(
            sa.select(sa.func.count()).select_from(Event).where(Event.type == "charge.created")
        )
    assert created_events == 1


def test_a_payer_lock_on_another_payer_does_not_leak_between_charges(client, api_key):
    first = created(
        client, api_key, customer={"name": "Ana", "document": CPF}, expected_payer_tax_id=CPF
    )
    second = created(client, api_key, customer={"name": "Bia", "document": OTHER_CPF})
    assert first["expected_payer_tax_id"] == CPF
    assert "expected_payer_tax_id" not in second
