"""/v1/payments (the transaction wire format) through HTTP, refunds and checkout pages aside:
every create rule, finalisation by the real RQ worker for each method (boleto and Multibanco
check digits recomputed here from the standards), reads, lists, cancel, resend-webhook, the
per-transaction webhookUrl, provider status, receipts, stats/metrics and sandbox payment."""

import base64
import io
import json
import re
import threading
import time as time_module
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from dateutil.easter import easter
from pypdf import PdfReader

from app.extensions import db
from app.jobs import payments as payments_jobs
from app.jobs.payments import sweep_payments
from app.models import (
    Event,
    IdempotencyKey,
    KeyMode,
    LedgerPosting,
    Refund,
    RefundStatus,
    Transaction,
    WebhookDelivery,
)
from app.models.base import utcnow
from app.pix import brcode
from app.providers.base import ProviderError, ProviderRefused
from app.providers.sandbox import SandboxProvider
from app.services.transactions import charge_expiry
from tests.support import charges, factories
from tests.support.http import assert_error, count_rows
from tests.support.payments import create, created, finalised, get, paid, pay, payment_body
from tests.support.payouts import run_jobs

SAO_PAULO = ZoneInfo("America/Sao_Paulo")
BASE_KEYS = {"id", "status", "amount", "currency", "paymentMethods", "metadata", "createdAt"}
CREATE_KEYS = BASE_KEYS | {"customerName", "customerDocument", "customerEmail"}
METHOD_FIELDS = {
    "PIX": {"pixQrCode", "pixCopyPaste", "pixExpiresAt"},
    "CREDIT_CARD": {"cardRedirectUrl"},
    "MBWAY": set(),  # MB WAY pushes to the payer's phone: nothing to show
    "MULTIBANCO": {"mbEntity", "mbReference", "mbExpiresAt"},
    "BOLETO": {"boletoBarcode", "boletoLine", "boletoPdfUrl", "boletoExpiresAt"},
    "CRYPTO": {"cryptoAddress", "cryptoAmount", "cryptoNetwork", "cryptoCurrency"},
}
SETTLEMENT_FIELDS = {"paidWith", "providerFee", "platformFee", "netAmount", "paidAt"}
INSTRUCTION_FIELDS = set().union(*METHOD_FIELDS.values())
GET_KEYS = BASE_KEYS | SETTLEMENT_FIELDS | INSTRUCTION_FIELDS
METHOD_BODIES = {
    "PIX": {"currency": "BRL"},
    "BOLETO": {"currency": "BRL"},
    "CREDIT_CARD": {"currency": "EUR", "metadata": {"returnUrl": "https://shop.example/back"}},
    "MBWAY": {"currency": "EUR", "metadata": {"phone": "+351912345678"}},
    "MULTIBANCO": {"currency": "EUR"},
    "CRYPTO": {"currency": "USDT"},
}
MULTIBANCO_WEIGHTS = [51, 73, 17, 89, 38, 62, 45, 53, 15, 50, 5, 49, 34, 81, 76, 27, 90, 9, 30, 3]
MISSING = object()
FULLWIDTH_CPF = "".join(chr(0xFF10 + int(digit)) for digit in charges.CPF)  # isalnum, not ASCII


@pytest.fixture
def other_key(app):
    return factories.make_api_key(app, factories.make_account(app, "Outra Loja"))


def _method(app, redis, client, api_key, method, **overrides) -> dict:
    body = {"paymentMethods": [method], **METHOD_BODIES[method], **overrides}
    return finalised(app, redis, client, api_key, **body)


def _post(client, api_key, body: dict):
    body = {key: value for key, value in body.items() if value is not MISSING}
    return client.post("/v1/payments", json=body, headers={"apikey": api_key})


def _nothing_created(app) -> None:
    assert count_rows(app, Transaction) == 0
    assert count_rows(app, Event) == 0
    assert count_rows(app, IdempotencyKey) == 0


def _api(client, api_key, method, path, **kwargs):
    return getattr(client, method)(f"/v1/payments{path}", headers={"apikey": api_key}, **kwargs)


def _list(client, api_key, query: str = ""):
    return client.get(f"/v1/payments?{query}", headers={"apikey": api_key})


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [item["id"].removeprefix("tx_") for item in response.get_json()["data"]]


def _cancel(client, api_key, payment_id):
    return _api(client, api_key, "post", f"/{payment_id}/cancel")


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _events(app, payment_id: str, event_type: str) -> list[Event]:
    with app.app_context():
        return db.session.scalars(
            sa.select(Event)
            .where(Event.subject_id == payment_id, Event.type == event_type)
            .order_by(Event.created_at)
        ).all()


def _register(client, api_key, url, events) -> dict:
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": url, "events": list(events)},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


# Standards recomputed here, independently of app.methods and app.business_days.


def _mod10(digits: str) -> int:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        product = int(digit) * (2 if position % 2 == 0 else 1)
        total += sum(divmod(product, 10))
    return (10 - total % 10) % 10


def _mod11(digits: str) -> int:
    weights = [2, 3, 4, 5, 6, 7, 8, 9]
    total = sum(int(d) * weights[i % 8] for i, d in enumerate(reversed(digits)))
    check = 11 - total % 11
    return 1 if check in (0, 10, 11) else check


def _brazilian_holidays(year: int) -> set[date]:
    fixed = [(1, 1), (4, 21), (5, 1), (9, 7), (10, 12), (11, 2), (11, 15), (11, 20), (12, 25)]
    sunday = easter(year)
    movable = {sunday + timedelta(days=offset) for offset in (-48, -47, -2, 60)}
    return {date(year, month, day) for month, day in fixed} | movable


def _business_days_after(day: date, count: int) -> date:
    while count:
        day += timedelta(days=1)
        if day.weekday() < 5 and day not in _brazilian_holidays(day.year):
            count -= 1
    return day


def _due_factor(due: date) -> int:
    """FEBRABAN: days since 1997-10-07, restarting at 1000 on 2025-02-22."""
    return 1000 + (due - date(2025, 2, 22)).days


def _multibanco_check(entity: str, reference_id: str, amount: int) -> str:
    digits = f"{entity}{reference_id}{amount:08d}"
    total = sum(int(d) * w for d, w in zip(digits, MULTIBANCO_WEIGHTS, strict=True))
    return f"{98 - total % 97:02d}"


# field: the values it refuses; the error names the field unless the value says otherwise
CREATE_RULES = {
    "amount": [MISSING, 0, -100, "100", 1.5, True, None, 10**12],  # invalid_amount
    "currency": ["BR", "ABCDEFGHI", "BR-L", "R$ "],
    "paymentMethods": [MISSING, [], "PIX", ["PIX", "PIX"]],
    "paymentMethods.0": [["PAYPAL"], ["pix"]],
    "customerEmail": ["not-an-email", "ana@", "ana souza@example.com"],
    "customerId": ["c" * 129],
    "customerName": ["n" * 141],
    "customerDocument": ["1" * 33, "529#982", FULLWIDTH_CPF],
    "metadata": ["order 42", ["order"]],
    "metadata.returnUrl": ["/back", "ftp://x.example/", "javascript:alert(1)", 42],
    "metadata.phone": [MISSING, None, "912345678", "+351 912 345 678", 351],  # MBWAY needs it
    "webhookUrl": ["https://example.com/hooks"],  # webhook_url_not_registered
    "idempotencyKey": [MISSING, "1234567", "k" * 129, 12345678],
    "orderId": ["42"],  # not a field of the body
}
SPECIFIC_CODES = {"amount": "invalid_amount", "webhookUrl": "webhook_url_not_registered"}


def _overrides(param: str, value) -> dict:
    if param == "metadata.returnUrl":
        return {"metadata": {"returnUrl": value}}
    if param == "metadata.phone":
        phone = {} if value is MISSING else {"phone": value}
        return {"paymentMethods": ["MBWAY"], "currency": "EUR", "metadata": phone}
    return {param.removesuffix(".0"): value}


@pytest.mark.parametrize(
    ("param", "value"),
    [(param, value) for param, values in CREATE_RULES.items() for value in values],
)
def test_a_create_that_breaks_a_rule_is_400_and_creates_nothing(app, client, api_key, param, value):
    response = _post(client, api_key, payment_body(**_overrides(param, value)))
    code = SPECIFIC_CODES.get(param, "invalid_request")
    assert_error(response, 400, "invalid_request_error", code, param=param)
    _nothing_created(app)


@pytest.mark.parametrize(
    ("methods", "currency", "amount"),
    # the last two: above the 10 digits a boleto carries and the 8 a Multibanco reference covers
    [(m, c, 25_000) for m, c in (("MBWAY", "BRL"), ("PIX", "EUR"), ("CRYPTO", "BRL"))]
    + [
        (m, c, 25_000)
        for m, c in (("BOLETO", "EUR"), ("MULTIBANCO", "BRL"), ("PIX CREDIT_CARD", "EUR"))
    ]
    + [("BOLETO", "BRL", 10**10), ("MULTIBANCO", "EUR", 10**8)],
)
def test_a_method_no_provider_serves_is_422_and_creates_nothing(
    app, client, api_key, methods, currency, amount
):
    phone = {"phone": "+351912345678"}
    body = payment_body(paymentMethods=methods.split(), currency=currency, amount=amount)
    response = _post(client, api_key, {**body, "metadata": phone})
    error = assert_error(response, 422, "invalid_request_error", "unprocessable_entity")
    assert methods.split()[0] in error["message"]
    _nothing_created(app)


def test_a_live_key_without_a_live_provider_is_422(app, client, account_id):
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    response = _post(client, live_key, payment_body())
    assert_error(response, 422, "invalid_request_error", "unprocessable_entity")
    _nothing_created(app)


def test_webhook_url_must_be_an_active_endpoint_of_this_account(
    app, client, api_key, other_key, receiver
):
    foreign = _register(client, other_key, receiver.url + "/other", ["charge.paid"])
    mine = _register(client, api_key, receiver.url, ["charge.paid"])
    path, headers = f"/v1/webhooks/endpoints/{mine['id']}", {"apikey": api_key}
    client.patch(path, json={"status": "INACTIVE"}, headers=headers)
    for url in (foreign["url"], mine["url"], mine["url"] + "/"):
        response = _post(client, api_key, payment_body(webhookUrl=url))
        code = "webhook_url_not_registered"
        assert_error(response, 400, "invalid_request_error", code, "webhookUrl")
    assert count_rows(app, Transaction) == 0
    client.patch(path, json={"status": "ACTIVE"}, headers=headers)
    assert _post(client, api_key, payment_body(webhookUrl=mine["url"])).status_code == 201


def test_pending_payments_count_toward_the_payer_velocity_limit(app, client, api_key):
    """Payments still PENDING (not yet finalised) are open ones: the sixth for a payer is 403."""
    for _ in range(5):
        created(client, api_key, customerDocument=charges.CPF)
    response = create(client, api_key, customerDocument="529.982.247-25")
    assert_error(response, 403, "permission_error", "fraud.customer_velocity_exceeded")
    assert count_rows(app, Transaction) == 5
    assert created(client, api_key, customerDocument=charges.OTHER_CPF)["status"] == "PENDING"


def test_create_answers_exactly_the_create_shape_pending(app, client, api_key):
    metadata = {"order": "42", "returnUrl": "https://shop.example/back", "_secret": "x"}
    body = payment_body(currency="eur", paymentMethods=["CREDIT_CARD", "MULTIBANCO"])
    body |= {"customerDocument": "529.982.247-25", "customerEmail": "Ana@Example.com"}
    body["metadata"] = metadata | {"failure": "forged", "med": {"status": "closed"}}
    response = _post(client, api_key, body | {"customerId": "user-7"})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert set(body) == CREATE_KEYS
    assert str(uuid.UUID(body["id"])) == body["id"]
    assert body["status"] == "PENDING"
    assert (body["amount"], body["currency"]) == (25_000, "EUR")
    assert body["paymentMethods"] == ["CREDIT_CARD", "MULTIBANCO"]
    assert (body["customerName"], body["customerDocument"]) == ("Ana Souza", "52998224725")
    assert body["customerEmail"] == "Ana@example.com"
    assert body["metadata"] == {"order": "42", "returnUrl": "https://shop.example/back"}
    assert abs(_when(body["createdAt"]) - utcnow()) < timedelta(seconds=5)
    assert "Idempotent-Replayed" not in response.headers
    assert get(client, api_key, body["id"]).get_json()["status"] == "PENDING"


def test_a_replay_returns_the_original_and_another_body_is_409(app, client, api_key):
    body = payment_body()
    first = _post(client, api_key, body)
    replay = _post(client, api_key, dict(reversed(body.items())))
    assert replay.status_code == 201
    assert replay.get_json() == first.get_json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert count_rows(app, Transaction) == 1

    changed = _post(client, api_key, {**body, "amount": 25_001})
    assert_error(changed, 409, "conflict_error", "idempotency_key_reused")
    assert count_rows(app, Transaction) == 1
    defaulted = _post(
        client, api_key, {**body, "currency": MISSING, "idempotencyKey": "second-key"}
    )
    assert defaulted.get_json()["currency"] == "BRL"


def test_a_refused_create_frees_its_key_for_the_corrected_request(app, client, api_key):
    body = payment_body(amount=0)
    assert _post(client, api_key, body).status_code == 400
    response = _post(client, api_key, {**body, "amount": 100})
    assert response.status_code == 201
    assert count_rows(app, Transaction) == 1


@pytest.mark.parametrize("method", list(METHOD_FIELDS))
def test_the_worker_finalises_each_method_filling_only_its_fields(
    app, redis, client, api_key, method
):
    payment = _method(app, redis, client, api_key, method)
    assert set(payment) == GET_KEYS
    assert payment["status"] == "WAITING_PAYMENT"
    assert payment["paymentMethods"] == [method]
    for field in METHOD_FIELDS[method]:
        assert payment[field] is not None, field
    for field in (INSTRUCTION_FIELDS - METHOD_FIELDS[method]) | SETTLEMENT_FIELDS:
        assert payment[field] is None, field
    assert sorted(charges.event_types(app, payment["id"])) == ["charge.created", "payment.created"]
    created_event = charges.events(app, payment["id"])["payment.created"]
    assert created_event["transactionId"] == payment["id"] and "customerId" not in created_event
    assert (created_event["status"], created_event["previousStatus"]) == ("WAITING_PAYMENT", None)


@pytest.mark.parametrize("amount", [123_456, 9_999_999_999])
def test_boleto_barcode_and_line_follow_febraban(app, redis, client, api_key, amount):
    today_before = datetime.now(SAO_PAULO).date()
    payment = _method(app, redis, client, api_key, "BOLETO", amount=amount)
    today_after = datetime.now(SAO_PAULO).date()
    code, line = payment["boletoBarcode"], payment["boletoLine"]

    assert re.fullmatch(r"\d{44}", code)
    assert code[3] == "9"  # real
    assert int(code[4]) == _mod11(code[:4] + code[5:])
    assert code[9:19] == f"{amount:010d}"
    due_dates = {_business_days_after(day, 3) for day in (today_before, today_after)}
    assert int(code[5:9]) in {_due_factor(due) for due in due_dates}
    (due,) = [d for d in due_dates if _due_factor(d) == int(code[5:9])]
    end_of_due = datetime.combine(due + timedelta(days=1), time.min, tzinfo=SAO_PAULO)
    assert _when(payment["boletoExpiresAt"]) == end_of_due

    assert re.fullmatch(r"\d{47}", line)
    fields = (line[0:10], line[10:21], line[21:32])
    for field in fields:
        assert int(field[-1]) == _mod10(field[:-1])
    rebuilt = line[0:4] + line[32] + line[33:47] + line[4:9] + line[10:20] + line[21:31]
    assert rebuilt == code
    assert payment["boletoPdfUrl"] == f"http://localhost/checkout/{payment['id']}/boleto.pdf"


@pytest.mark.parametrize("amount", [4_999, 99_999_999])
def test_multibanco_entity_and_reference_carry_the_sibs_check_digits(
    app, redis, client, api_key, amount
):
    payment = _method(app, redis, client, api_key, "MULTIBANCO", amount=amount)
    entity, reference = payment["mbEntity"], payment["mbReference"]
    assert re.fullmatch(r"\d{5}", entity) and re.fullmatch(r"\d{9}", reference)
    assert reference[7:] == _multibanco_check(entity, reference[:7], amount)
    assert reference[7:] != _multibanco_check(entity, reference[:7], amount - 1)
    assert utcnow() < _when(payment["mbExpiresAt"]) <= utcnow() + timedelta(days=3)


def test_pix_code_parses_and_its_qr_is_a_png(app, redis, client, api_key):
    payment = _method(app, redis, client, api_key, "PIX")
    code = brcode.parse(payment["pixCopyPaste"])
    assert code.is_dynamic and code.amount_cents == 25_000
    assert code.merchant_name == "Padaria Sao Joao"
    assert code.location.startswith("localhost/v1/qr/")
    lifetime = _when(payment["pixExpiresAt"]) - _when(payment["createdAt"])
    assert timedelta(minutes=59) < lifetime < timedelta(minutes=61)
    image = client.get(urlsplit(payment["pixQrCode"]).path)
    assert image.status_code == 200 and image.mimetype == "image/png"
    assert image.data.startswith(b"\x89PNG")


def test_card_and_crypto_instructions(app, redis, client, api_key):
    card = _method(app, redis, client, api_key, "CREDIT_CARD")
    assert card["cardRedirectUrl"] == f"http://localhost/checkout/{card['id']}/card"
    crypto = _method(app, redis, client, api_key, "CRYPTO")
    assert re.fullmatch(r"0x[0-9a-f]{40}", crypto["cryptoAddress"])
    shown = [crypto[f"crypto{name}"] for name in ("Amount", "Network", "Currency")]
    assert shown == ["250.00", "BSC", "USDT"]
    cents = _method(app, redis, client, api_key, "CRYPTO", amount=5, currency="USDC")
    assert (cents["cryptoAmount"], cents["cryptoCurrency"]) == ("0.05", "USDC")


def test_a_multi_method_payment_fills_every_method(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    assert payment["status"] == "WAITING_PAYMENT"
    filled = METHOD_FIELDS["PIX"] | METHOD_FIELDS["BOLETO"]
    assert all(payment[field] is not None for field in filled)
    others = INSTRUCTION_FIELDS - filled
    assert all(payment[field] is None for field in others)


@pytest.mark.parametrize("method", ["PIX", "CREDIT_CARD"])
def test_the_failing_sandbox_amount_ends_refused(app, redis, client, api_key, method):
    payment = _method(app, redis, client, api_key, method, amount=50_300)
    assert payment["status"] == "REFUSED"
    failure = payment["metadata"]["failure"]
    assert failure["providerErrorCode"] == "sandbox_refused" and failure["reason"]
    assert all(payment[field] is None for field in METHOD_FIELDS[method])
    assert sorted(charges.event_types(app, payment["id"])) == ["charge.failed", "payment.failed"]
    (refused,) = _events(app, payment["id"], "payment.failed")
    assert (refused.data["status"], refused.data["previousStatus"]) == ("REFUSED", "PENDING")


@pytest.mark.parametrize(
    ("method", "status", "fees"),
    [
        ("PIX", "PAID", (50, 198)),
        ("BOLETO", "PAID", (200, 149)),
        ("CREDIT_CARD", "APPROVED", (625, 373)),
        ("MBWAY", "PAID", (185, 250)),
        ("MULTIBANCO", "PAID", (275, 250)),
        ("CRYPTO", "PAID", (125, 250)),
    ],
)
def test_paying_fires_payment_completed_with_fees_and_net(
    app, redis, client, api_key, method, status, fees
):
    payment = _method(app, redis, client, api_key, method, customerId="user-7")
    settled = pay(client, api_key, payment["id"]).get_json()
    assert settled["status"] == status and settled["paidWith"] == method
    assert settled["paidAt"] is not None
    assert settled["netAmount"] == 25_000 - settled["providerFee"] - settled["platformFee"]
    assert (settled["providerFee"], settled["platformFee"]) == fees  # the default schedule
    (completed,) = _events(app, payment["id"], "payment.completed")
    data = completed.data
    shown = ("amount", "status", "paidWith", "providerFee", "platformFee", "netAmount")
    assert {key: data[key] for key in shown} == {key: settled[key] for key in shown}
    assert data["previousStatus"] in {"WAITING_PAYMENT", "PROCESSING"}
    assert (data["transactionId"], data["customerId"]) == (payment["id"], "user-7")  # echoed
    assert _events(app, payment["id"], "payment.created")[0].data["customerId"] == "user-7"
    assert len(_events(app, payment["id"], "charge.paid")) == 1
    assert get(client, api_key, payment["id"]).get_json() == settled


def test_the_sweep_finalises_a_payment_whose_job_never_ran(app, redis, client, api_key):
    stale = created(client, api_key)
    fresh = created(client, api_key)
    charges.update_row(app, stale["id"], created_at=utcnow() - timedelta(minutes=1))
    with app.app_context():
        assert sweep_payments() == 1
    swept = get(client, api_key, stale["id"]).get_json()
    assert swept["status"] == "WAITING_PAYMENT" and swept["pixCopyPaste"]
    assert get(client, api_key, fresh["id"]).get_json()["status"] == "PENDING"
    run_jobs(app, redis)  # the late jobs: the swept one is not finalised twice
    assert get(client, api_key, fresh["id"]).get_json()["status"] == "WAITING_PAYMENT"
    assert get(client, api_key, stale["id"]).get_json() == swept
    assert len(_events(app, stale["id"], "payment.created")) == 1


def test_a_payment_whose_window_passed_before_finalisation_expires(app, redis, client, api_key):
    late, two_hours_ago = created(client, api_key), utcnow() - timedelta(hours=2)
    charges.update_row(app, late["id"], created_at=two_hours_ago, expires_at=utcnow())
    with app.app_context():
        assert sweep_payments() == 1
    expired = get(client, api_key, late["id"]).get_json()
    assert expired["status"] == "EXPIRED" and expired["pixCopyPaste"] is None
    assert "payment.created" not in charges.event_types(app, late["id"])


def test_get_accepts_raw_tx_and_ch_ids_within_the_account(app, redis, client, api_key, other_key):
    payment = _method(app, redis, client, api_key, "PIX")
    for any_id in (payment["id"], "tx_" + payment["id"], "ch_" + payment["id"]):
        assert get(client, api_key, any_id).get_json() == payment
    assert_error(get(client, other_key, payment["id"]), 404, "not_found_error", "not_found")
    assert_error(get(client, api_key, str(uuid.uuid4())), 404, "not_found_error", "not_found")


def test_a_charge_is_readable_as_a_payment(client, api_key):
    charge = charges.created(client, api_key, amount=12_345)
    payment = get(client, api_key, charges.raw(charge["id"])).get_json()
    assert set(payment) == GET_KEYS
    assert (payment["id"], payment["status"]) == (charges.raw(charge["id"]), "WAITING_PAYMENT")
    assert payment["pixCopyPaste"] == charge["pix"]["br_code"]
    assert (payment["amount"], payment["paymentMethods"]) == (12_345, ["PIX"])


def test_a_payment_is_readable_as_a_charge_with_the_public_status(app, redis, client, api_key):
    pending = created(client, api_key)
    assert charges.get(client, api_key, "ch_" + pending["id"]).get_json()["status"] == "pending"
    run_jobs(app, redis)
    as_charge = charges.get(client, api_key, "ch_" + pending["id"]).get_json()
    copy_paste = get(client, api_key, pending["id"]).get_json()["pixCopyPaste"]
    assert (as_charge["status"], as_charge["id"]) == ("pending", "ch_" + pending["id"])
    assert as_charge["pix"]["br_code"] == copy_paste
    pay(client, api_key, pending["id"])
    assert charges.get(client, api_key, "ch_" + pending["id"]).get_json()["status"] == "paid"

    cancelled = _method(app, redis, client, api_key, "BOLETO")
    _cancel(client, api_key, cancelled["id"])
    card = _method(app, redis, client, api_key, "CREDIT_CARD")
    pay(client, api_key, card["id"])
    refused = _method(app, redis, client, api_key, "PIX", amount=50_300)
    for payment, public in ((cancelled, "cancelled"), (card, "paid"), (refused, "failed")):
        assert charges.get(client, api_key, "ch_" + payment["id"]).get_json()["status"] == public


def _at(day: int, hour: int = 12, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def test_list_pages_with_default_limit_20_and_tx_ids(app, client, api_key):
    ids = [created(client, api_key, amount=100 + i)["id"] for i in range(25)]
    first = _list(client, api_key)
    body = first.get_json()
    assert set(body) == {"data", "total", "page", "limit"}
    assert (body["total"], body["page"], body["limit"], len(body["data"])) == (25, 1, 20, 20)
    assert all(item["id"] == "tx_" + item["id"][3:] for item in body["data"])
    assert set(body["data"][0]) == GET_KEYS
    second = _list(client, api_key, "page=2").get_json()
    assert (second["page"], len(second["data"])) == (2, 5)
    assert sorted(_ids(first) + _ids(_list(client, api_key, "page=2"))) == sorted(ids)
    assert _ids(first) == list(reversed(ids))[:20]  # newest first by default
    everything = _list(client, api_key, "limit=100").get_json()
    assert (everything["limit"], len(everything["data"])) == (100, 25)
    assert _list(client, api_key, "page=9").get_json()["data"] == []


BAD_LIST_QUERIES = {  # parameter: values refused (repeats and a start after the end too)
    "limit": ["101", "0", "ten", "10&limit=20"],
    "page": ["0", "2147483648", "100000000000000000000"],
    "status": ["paid", "PAID&status=EXPIRED"],
    "startDate": ["yesterday", "0001-01-01T00:00:00%2B01:00", "2026-11-12&endDate=2026-11-11"],
    "endDate": ["2026-13-01", "9999-12-31T23:00:00-03:00"],
    "sortBy": ["customerEmail", "amount;drop"],
    "sortOrder": ["up", "DESC"],
    "offset": ["20"],
}


@pytest.mark.parametrize(
    ("param", "value"),
    [(param, value) for param, values in BAD_LIST_QUERIES.items() for value in values],
)
def test_bad_list_queries_are_400(client, api_key, param, value):
    response = _list(client, api_key, f"{param}={value}")
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


def test_status_filter_counts_an_overdue_wait_as_expired(app, redis, client, api_key):
    waiting = _method(app, redis, client, api_key, "PIX")
    overdue = _method(app, redis, client, api_key, "PIX")
    settled = paid(app, redis, client, api_key)
    charges.update_row(app, overdue["id"], expires_at=utcnow() - timedelta(seconds=1))
    assert _ids(_list(client, api_key, "status=WAITING_PAYMENT")) == [waiting["id"]]
    assert _list(client, api_key, "status=WAITING_PAYMENT").get_json()["total"] == 1
    expired = _list(client, api_key, "status=EXPIRED").get_json()
    assert (expired["total"], [p["status"] for p in expired["data"]]) == (1, ["EXPIRED"])
    assert expired["data"][0]["id"] == "tx_" + overdue["id"]
    assert _ids(_list(client, api_key, "status=PAID")) == [settled["id"]]
    empty = {"data": [], "total": 0, "page": 1, "limit": 20}
    assert _list(client, api_key, "status=REFUNDED").get_json() == empty


def test_date_filters_are_inclusive_as_dates_and_date_times(app, client, api_key):
    times = [_at(10, 23, 59, 59), _at(11, 0), _at(11, 23, 59, 59), _at(12, 0)]
    ids = []
    for moment in times:
        ids.append(created(client, api_key)["id"])
        charges.update_row(app, ids[-1], created_at=moment)
    whole_day = _ids(_list(client, api_key, "startDate=2026-11-11&endDate=2026-11-11"))
    assert whole_day == [ids[2], ids[1]]
    assert _ids(_list(client, api_key, "startDate=2026-11-12")) == [ids[3]]
    assert _ids(_list(client, api_key, "endDate=2026-11-10")) == [ids[0]]
    exact = "startDate=2026-11-11T00:00:00Z&endDate=2026-11-12T00:00:00Z"
    assert _ids(_list(client, api_key, exact)) == [ids[3], ids[2], ids[1]]
    offset = "startDate=2026-11-10T20:59:59-03:00&endDate=2026-11-11T20:59:59%2D03:00"
    assert _ids(_list(client, api_key, offset)) == [ids[2], ids[1], ids[0]]
    same = "startDate=2026-11-11T00:00:00Z&endDate=2026-11-11T00:00:00Z"
    assert _ids(_list(client, api_key, same)) == [ids[1]]


def test_sort_by_fields_in_both_orders_as_shown_with_nulls_last(app, redis, client, api_key):
    amounts = [30_000, 10_000, 20_000, 40_000, 5_000]
    made = [_method(app, redis, client, api_key, "BOLETO", amount=a)["id"] for a in amounts]
    for index, payment_id in enumerate(made):
        charges.update_row(app, payment_id, created_at=_at(10 + index))
    pay(client, api_key, made[0]), pay(client, api_key, made[2]), _cancel(client, api_key, made[3])
    charges.update_row(app, made[0], paid_at=_at(20))
    charges.update_row(app, made[2], paid_at=_at(18))
    charges.update_row(app, made[4], expires_at=utcnow() - timedelta(seconds=1))

    def order(query):
        return [made.index(i) for i in _ids(_list(client, api_key, query))]

    # the overdue wait is shown EXPIRED, and sorts so, before anything stored it
    by_status = order("sortBy=status&sortOrder=asc")  # CANCELLED EXPIRED PAID PAID WAITING
    assert (by_status[:2], set(by_status[2:4]), by_status[4]) == ([3, 4], {0, 2}, 1)
    by_status = order("sortBy=status&sortOrder=desc")
    assert (by_status[0], set(by_status[1:3]), by_status[3:]) == (1, {0, 2}, [4, 3])
    assert order("sortBy=amount&sortOrder=asc") == [4, 1, 2, 0, 3]
    assert order("sortBy=amount&sortOrder=desc") == [3, 0, 2, 1, 4]
    assert order("sortBy=amount") == [3, 0, 2, 1, 4]  # desc by default
    assert order("sortBy=createdAt&sortOrder=asc") == [0, 1, 2, 3, 4]
    assert order("") == [4, 3, 2, 1, 0]
    assert order("sortBy=amount&sortOrder=asc&limit=2&page=2") == [2, 0]
    for field, ascending in (("paidAt", [2, 0]), ("netAmount", [2, 0]), ("paidWith", None)):
        asc, desc = order(f"sortBy={field}&sortOrder=asc"), order(f"sortBy={field}&sortOrder=desc")
        assert set(asc[2:]) == set(desc[2:]) == {1, 3, 4}  # shown null: last both ways
        if ascending:
            assert (asc[:2], desc[:2]) == (ascending, ascending[::-1])
    assert order("sortBy=boletoPdfUrl&sortOrder=asc") == sorted(range(5), key=made.__getitem__)


def test_every_top_level_field_sorts_as_shown_with_nulls_last(app, redis, client, api_key):
    for method in METHOD_FIELDS:
        _method(app, redis, client, api_key, method, amount=10_000 + len(method))
    for settled in _ids(_list(client, api_key, "limit=2")):
        pay(client, api_key, settled)
    for field in sorted(GET_KEYS):
        for direction in ("asc", "desc"):
            response = _list(client, api_key, f"sortBy={field}&sortOrder={direction}")
            assert response.status_code == 200, (field, response.get_json())
            values = [item[field] for item in response.get_json()["data"]]
            assert len(values) == 6
            if field in {"paymentMethods", "metadata"}:
                continue
            shown = [v for v in values if v is not None]
            assert values == shown + [None] * (6 - len(shown)), (field, direction, values)
            assert shown == sorted(shown, reverse=direction == "desc"), (field, direction)


def test_lists_keep_to_the_account_and_the_mode(app, redis, client, account_id, api_key, other_key):
    mine = created(client, api_key)["id"]
    created(client, other_key)
    moved = created(client, api_key)["id"]
    charges.update_row(app, moved, mode=KeyMode.LIVE)
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    assert _ids(_list(client, api_key)) == [mine]
    assert _ids(_list(client, live_key)) == [moved]
    assert _list(client, api_key).get_json()["total"] == 1
    assert_error(get(client, api_key, moved), 404, "not_found_error", "not_found")


def test_cancel_from_waiting_payment(app, redis, client, api_key):
    payment = _method(app, redis, client, api_key, "BOLETO")
    response = _cancel(client, api_key, payment["id"])
    assert response.status_code == 200
    cancelled = response.get_json()
    assert set(cancelled) == GET_KEYS and cancelled["status"] == "CANCELLED"
    failure = cancelled["metadata"]["failure"]
    assert failure["providerErrorCode"] == "canceled" and failure["reason"]
    assert cancelled["metadata"]["order"] == "42"
    assert get(client, api_key, payment["id"]).get_json() == cancelled
    types = charges.event_types(app, payment["id"])
    assert types.count("payment.failed") == 1 and types.count("charge.failed") == 1
    (event,) = _events(app, payment["id"], "payment.failed")
    assert (event.data["status"], event.data["previousStatus"]) == ("CANCELLED", "WAITING_PAYMENT")
    assert_error(
        pay(client, api_key, payment["id"]), 409, "conflict_error", "transaction_not_payable"
    )


def test_cancel_while_pending_wins_over_the_late_job(app, redis, client, api_key):
    payment = created(client, api_key)
    cancelled = _cancel(client, api_key, "tx_" + payment["id"]).get_json()
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["metadata"]["failure"]["providerErrorCode"] == "canceled"
    run_jobs(app, redis)
    after = get(client, api_key, payment["id"]).get_json()
    assert after["status"] == "CANCELLED" and after["pixCopyPaste"] is None
    assert sorted(charges.event_types(app, payment["id"])) == ["charge.failed", "payment.failed"]


def test_cancel_while_processing_returns_the_held_pix(app, client, account_id, api_key):
    charge = charges.created(
        client, api_key, customer={"name": "Ana Souza"}, expected_payer_tax_id=charges.CPF
    )
    held = charges.pay(client, api_key, charge["id"], payer_document=None).get_json()
    assert held["status"] == "processing"
    raw = charges.raw(charge["id"])
    assert get(client, api_key, raw).get_json()["status"] == "PROCESSING"
    cancelled = _cancel(client, api_key, raw).get_json()
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["metadata"]["failure"]["providerErrorCode"] == "canceled"
    with app.app_context():
        (refund,) = db.session.scalars(sa.select(Refund).where(Refund.transaction_id == raw))
        assert refund.automatic and refund.amount == charge["amount"]
    types = charges.event_types(app, raw)
    assert {"payment.failed", "charge.failed"} <= set(types) and "charge.paid" not in types
    assert charges.get(client, api_key, charge["id"]).get_json()["status"] == "cancelled"


def test_only_unsettled_open_payments_can_be_cancelled(app, redis, client, api_key, other_key):
    settled = paid(app, redis, client, api_key)
    expired = _method(app, redis, client, api_key, "PIX")
    charges.update_row(app, expired["id"], expires_at=utcnow() - timedelta(seconds=1))
    cancelled = _method(app, redis, client, api_key, "PIX")
    _cancel(client, api_key, cancelled["id"])
    refused = _method(app, redis, client, api_key, "PIX", amount=50_300)
    closed = {"PAID": settled, "EXPIRED": expired, "CANCELLED": cancelled, "REFUSED": refused}
    for status, payment in closed.items():
        assert get(client, api_key, payment["id"]).get_json()["status"] == status
        before = charges.event_types(app, payment["id"])
        response = _cancel(client, api_key, payment["id"])
        assert_error(response, 409, "conflict_error", "transaction_not_cancellable")
        assert get(client, api_key, payment["id"]).get_json()["status"] == status
        assert charges.event_types(app, payment["id"]) == before
    waiting = _method(app, redis, client, api_key, "PIX")
    assert_error(_cancel(client, other_key, waiting["id"]), 404, "not_found_error", "not_found")


def test_resend_re_emits_the_current_status_as_a_new_event(app, redis, client, api_key, receiver):
    _register(client, api_key, receiver.url, ["payment.completed"])
    payment = paid(app, redis, client, api_key)
    (original,) = _events(app, payment["id"], "payment.completed")
    response = _api(client, api_key, "post", f"/{payment['id']}/resend-webhook")
    assert response.get_json() == {"resent": True, "status": "PAID"}
    first, again = _events(app, payment["id"], "payment.completed")
    assert first.id == original.id and again.id != original.id
    assert again.data == original.data
    run_jobs(app, redis)
    bodies = [json.loads(r.body) for r in receiver.received]
    assert [b["event"] for b in bodies] == ["payment.completed", "payment.completed"]
    assert bodies[0]["data"] == bodies[1]["data"] == original.data
    ids = {r.headers["X-Acme-Delivery-Id"] for r in receiver.received}
    assert len(ids) == 2


def test_resend_without_a_listener_or_a_status_event_sends_nothing(
    app, redis, client, api_key, other_key, receiver
):
    settled = paid(app, redis, client, api_key)
    events_before = count_rows(app, Event)
    answer = _api(client, api_key, "post", f"/{settled['id']}/resend-webhook").get_json()
    assert answer == {"resent": False, "status": "PAID"}
    assert count_rows(app, Event) == events_before
    _register(client, api_key, receiver.url, ["payment.created", "payment.status_changed"])
    pending = created(client, api_key)
    events_before = count_rows(app, Event)
    answer = _api(client, api_key, "post", f"/{pending['id']}/resend-webhook").get_json()
    assert answer == {"resent": False, "status": "PENDING"}
    assert count_rows(app, Event) == events_before
    response = _api(client, other_key, "post", f"/{settled['id']}/resend-webhook")
    assert_error(response, 404, "not_found_error", "not_found")


def test_resend_of_an_expired_payment_reaches_payment_failed_listeners(
    app, redis, client, api_key, receiver
):
    """An expiry fired payment.expired and payment.failed; a resend re-announces it to an
    endpoint that listens to payment.failed only."""
    _register(client, api_key, receiver.url, ["payment.failed"])
    payment = _method(app, redis, client, api_key, "PIX")
    charges.update_row(app, payment["id"], expires_at=utcnow() - timedelta(seconds=1))
    assert get(client, api_key, payment["id"]).get_json()["status"] == "EXPIRED"
    response = _api(client, api_key, "post", f"/{payment['id']}/resend-webhook")
    assert response.get_json() == {"resent": True, "status": "EXPIRED"}
    first, again = _events(app, payment["id"], "payment.failed")
    assert again.data == first.data and again.data["status"] == "EXPIRED"
    assert len(_events(app, payment["id"], "payment.expired")) == 1  # nobody listens to it
    run_jobs(app, redis)
    assert [r.headers["X-Acme-Event-Type"] for r in receiver.received] == ["payment.failed"] * 2


def test_webhook_url_receives_that_transactions_payment_events_only(
    app, redis, client, api_key, receiver
):
    endpoint = _register(client, api_key, receiver.url, ["charge.created"])
    routed = paid(app, redis, client, api_key, webhookUrl=receiver.url)
    plain = paid(app, redis, client, api_key)
    run_jobs(app, redis)
    with app.app_context():
        rows = db.session.execute(
            sa.select(Event.subject_id, WebhookDelivery.event_type, WebhookDelivery.status)
            .join(Event, Event.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.endpoint_id == endpoint["id"])
        ).all()
    by_payment: dict[str, set[str]] = {}
    for subject_id, event_type, status in rows:
        assert status == "DELIVERED"
        by_payment.setdefault(subject_id, set()).add(event_type)
    assert by_payment[routed["id"]] == {"charge.created", "payment.created", "payment.completed"}
    assert by_payment[plain["id"]] == {"charge.created"}
    legacy = [json.loads(r.body) for r in receiver.received if "event" in json.loads(r.body)]
    assert {(b["event"], b["data"]["transactionId"]) for b in legacy} == {
        ("payment.created", routed["id"]),
        ("payment.completed", routed["id"]),
    }


def test_provider_status_of_a_pix_follows_the_charge(app, redis, client, api_key):
    payment = _method(app, redis, client, api_key, "PIX")
    txid = charges.get(client, api_key, "ch_" + payment["id"]).get_json()["pix"]["txid"]
    path = f"/{payment['id']}/provider-status"
    status = _api(client, api_key, "get", path).get_json()
    assert set(status) == {"localStatus", "provider", "providerTransactionId"} | {
        "providerStatus",
        "rawResponse",
    }
    assert (status["localStatus"], status["provider"]) == ("WAITING_PAYMENT", "sandbox")
    assert (status["providerTransactionId"], status["providerStatus"]) == (txid, "ATIVA")
    assert status["rawResponse"]["txid"] == txid
    pay(client, api_key, payment["id"])
    status = _api(client, api_key, "get", path).get_json()
    assert (status["localStatus"], status["providerStatus"]) == ("PAID", "CONCLUIDA")


def test_provider_status_of_a_boleto_and_of_one_without_a_reference(
    app, redis, client, api_key, other_key
):
    boleto = _method(app, redis, client, api_key, "BOLETO")
    status = _api(client, api_key, "get", f"/{boleto['id']}/provider-status").get_json()
    assert status["providerTransactionId"].startswith("sbx_boleto_")
    assert status["providerStatus"] == "pending"
    assert status["rawResponse"]["id"] == status["providerTransactionId"]
    assert status["rawResponse"]["amount"] == 25_000
    refused = _method(app, redis, client, api_key, "PIX", amount=50_300)
    pending = created(client, api_key)
    for payment, local in ((refused, "REFUSED"), (pending, "PENDING")):
        response = _api(client, api_key, "get", f"/{payment['id']}/provider-status")
        assert response.status_code == 200
        assert response.get_json() == {
            "localStatus": local,
            "provider": "sandbox",
            "providerTransactionId": None,
            "providerStatus": None,
            "rawResponse": None,
            "error": "TRANSACTION_HAS_NO_PROVIDER_REFERENCE",
        }
    response = _api(client, other_key, "get", f"/{boleto['id']}/provider-status")
    assert_error(response, 404, "not_found_error", "not_found")


def test_a_receipt_is_a_pdf_of_a_settled_payment(app, redis, client, api_key, other_key):
    waiting = _method(app, redis, client, api_key, "PIX")
    response = _api(client, api_key, "get", f"/{waiting['id']}/receipt")
    assert_error(response, 409, "conflict_error", "transaction_not_settled")
    settled = paid(app, redis, client, api_key)
    receipt = _api(client, api_key, "get", f"/{settled['id']}/receipt").get_json()
    assert set(receipt) == {"contentType", "base64"}
    assert receipt["contentType"] == "application/pdf"
    pdf = base64.b64decode(receipt["base64"], validate=True)
    assert pdf.startswith(b"%PDF")
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    # a Brazilian account's receipt is in Portuguese (`app.i18n.account_locale`)
    assert "Comprovante de pagamento" in text and "Valor R$\u00a0250,00" in text
    assert settled["id"] in text and "Status Pago" in text
    card = _method(app, redis, client, api_key, "CREDIT_CARD", customerDocument=charges.CPF)
    pay(client, api_key, card["id"])
    receipt = _api(client, api_key, "get", f"/{card['id']}/receipt").get_json()
    pdf = PdfReader(io.BytesIO(base64.b64decode(receipt["base64"])))
    text = "".join(page.extract_text() for page in pdf.pages)
    assert "€\u00a0250,00" in text and "Status Aprovado" in text
    assert "Pago com Cartão de crédito" in text
    assert charges.CPF not in text  # the payer's document is masked
    response = _api(client, other_key, "get", f"/{settled['id']}/receipt")
    assert_error(response, 404, "not_found_error", "not_found")


@pytest.mark.parametrize("path", ["/stats", "/metrics"])
@pytest.mark.parametrize(
    ("query", "param"),
    [(f"days={days}", "days") for days in ("0", "-1", "x", "3661", "7&days=8")]
    + [("period=7", "period")],
)
def test_stats_and_metrics_refuse_bad_days_and_unknown_parameters(
    client, api_key, path, query, param
):
    response = _api(client, api_key, "get", f"{path}?{query}")
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


def test_stats_have_every_field_of_the_contract(app, redis, client, api_key):
    paid(app, redis, client, api_key)
    _method(app, redis, client, api_key, "BOLETO")
    stats = _api(client, api_key, "get", "/stats").get_json()
    counts = {"totalTransactions", "paidTransactions", "todayTransactions", "successRate"}
    volumes = {"volumeByCurrency", "todayVolumeByCurrency", "dailyVolume", "methodBreakdown"}
    assert set(stats) == counts | volumes
    assert (stats["totalTransactions"], stats["paidTransactions"]) == (2, 1)
    assert stats["todayTransactions"] == 2 and stats["successRate"] == 0.5
    assert stats["volumeByCurrency"] == [{"currency": "BRL", "volume": 25_000, "count": 1}]
    assert stats["todayVolumeByCurrency"] == {"BRL": 25_000}
    assert {"method": "PIX", "currency": "BRL", "volume": 25_000, "count": 1} in stats[
        "methodBreakdown"
    ]
    today = datetime.now(SAO_PAULO).date().isoformat()
    assert 7 <= len(stats["dailyVolume"]) <= 366
    assert stats["dailyVolume"][-1] == {"date": today, "currencies": {"BRL": 25_000}}
    assert all(set(point) == {"date", "currencies"} for point in stats["dailyVolume"])
    longest = _api(client, api_key, "get", "/stats?days=3660").get_json()
    assert len(longest["dailyVolume"]) == 366


def test_metrics_default_to_seven_days_and_filter_by_currency(app, redis, client, api_key):
    paid(app, redis, client, api_key)
    card = _method(app, redis, client, api_key, "CREDIT_CARD")
    pay(client, api_key, card["id"])
    everything = _api(client, api_key, "get", "/metrics").get_json()
    assert everything["window"]["days"] == 7 and everything["currency"] is None
    assert everything["funnel"]["created"] == 2 and everything["funnel"]["paid"] == 2
    euros = _api(client, api_key, "get", "/metrics?currency=eur").get_json()
    assert euros["currency"] == "EUR"
    assert (euros["funnel"]["created"], euros["funnel"]["paid"]) == (1, 1)
    assert {v["currency"] for v in euros["volume"]} == {"EUR"}
    bad = _api(client, api_key, "get", "/metrics?currency=E")
    assert_error(bad, 400, "invalid_request_error", "invalid_request", param="currency")


def test_sandbox_card_payment_can_be_declined(app, redis, client, api_key):
    approved = _method(app, redis, client, api_key, "CREDIT_CARD")
    response = client.post(
        f"/v1/sandbox/payments/{approved['id']}/pay", headers={"apikey": api_key}
    )
    assert response.get_json()["status"] == "APPROVED"  # no body: the only method, approved
    card = _method(app, redis, client, api_key, "CREDIT_CARD")
    declined = pay(client, api_key, card["id"], approved=False).get_json()
    assert declined["status"] == "REFUSED" and declined["paidAt"] is None
    assert declined["metadata"]["failure"]["providerErrorCode"] == "declined"
    types = charges.event_types(app, card["id"])
    assert {"charge.failed", "payment.failed"} <= set(types) and "payment.completed" not in types
    boleto = _method(app, redis, client, api_key, "BOLETO")
    refused = pay(client, api_key, boleto["id"], approved=False)
    assert_error(refused, 400, "invalid_request_error", "invalid_request", param="approved")
    response = pay(client, api_key, card["id"], approved="no")
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="approved")


def test_sandbox_payment_needs_an_offered_method_once(app, redis, client, account_id, api_key):
    both = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    for body in ({}, {"method": "CREDIT_CARD"}, {"method": "PAYPAL"}):
        response = pay(client, api_key, both["id"], **body)
        assert_error(response, 400, "invalid_request_error", "invalid_request", param="method")
    settled = pay(client, api_key, both["id"], method="BOLETO").get_json()
    assert (settled["status"], settled["paidWith"]) == ("PAID", "BOLETO")
    again = pay(client, api_key, both["id"], method="BOLETO")
    assert_error(again, 409, "conflict_error", "transaction_not_payable")
    pending = created(client, api_key, paymentMethods=["BOLETO"])
    response = pay(client, api_key, pending["id"])
    assert_error(response, 409, "conflict_error", "transaction_not_payable")
    pending_pix = created(client, api_key)
    response = pay(client, api_key, pending_pix["id"])  # no Pix code issued yet
    assert_error(response, 409, "conflict_error", "transaction_not_payable")
    assert get(client, api_key, pending_pix["id"]).get_json()["status"] == "PENDING"
    assert count_rows(app, LedgerPosting) == 1  # the boleto's only
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    assert_error(pay(client, live_key, both["id"]), 404, "not_found_error", "not_found")


# Provider references per method, and what happens to the other methods' instructions


def _auth(api_key: str) -> dict:
    return {"apikey": api_key}


def _pix_txid(app, payment_id: str) -> str:
    with app.app_context():
        return db.session.get(Transaction, payment_id).pix_txid


@pytest.fixture
def withdrawn(monkeypatch):
    """Every instruction the sandbox is asked to withdraw, as (method, reference)."""
    calls = []
    monkeypatch.setattr(
        SandboxProvider, "cancel_payment", lambda self, method, ref: calls.append((method, ref))
    )
    return calls


def test_a_currency_that_only_upper_cases_into_shape_is_400(client, api_key):
    response = create(client, api_key, currency="ßßß")  # "SSSSSS" once upper-cased
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="currency")


def test_each_method_keeps_its_own_reference_and_status(app, redis, client, api_key, withdrawn):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    before = client.get(f"/v1/payments/{payment['id']}/provider-status", headers=_auth(api_key))
    assert before.get_json()["providerStatus"] == "ATIVA"  # the first method, until one pays
    pay(client, api_key, payment["id"], method="BOLETO")
    after = client.get(f"/v1/payments/{payment['id']}/provider-status", headers=_auth(api_key))
    body = after.get_json()
    assert body["providerTransactionId"].startswith("sbx_boleto_")
    assert (body["providerStatus"], body["rawResponse"]["method"]) == ("paid", "BOLETO")
    assert withdrawn == [("PIX", _pix_txid(app, payment["id"]))]  # no paying twice


def test_cancel_withdraws_every_methods_instructions(app, redis, client, api_key, withdrawn):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    response = client.post(f"/v1/payments/{payment['id']}/cancel", headers=_auth(api_key))
    assert response.status_code == 200
    assert sorted(method for method, _ in withdrawn) == ["BOLETO", "PIX"]


def test_a_provider_timeout_leaves_the_payment_pending_for_the_sweep(
    app, redis, client, api_key, monkeypatch
):
    original = SandboxProvider.create_payment

    def timeout(self, request):
        raise ProviderError("Sandbox: timed out.", code="timeout")

    monkeypatch.setattr(SandboxProvider, "create_payment", timeout)
    payment = created(client, api_key, paymentMethods=["BOLETO"])
    run_jobs(app, redis)
    assert get(client, api_key, payment["id"]).get_json()["status"] == "PENDING"
    assert "payment.failed" not in charges.event_types(app, payment["id"])
    monkeypatch.setattr(SandboxProvider, "create_payment", original)
    charges.update_row(app, payment["id"], created_at=utcnow() - timedelta(minutes=1))
    with app.app_context():
        assert sweep_payments() == 1
    assert get(client, api_key, payment["id"]).get_json()["status"] == "WAITING_PAYMENT"


def test_the_sweep_backs_off_a_payment_the_provider_keeps_failing(
    app, redis, client, api_key, monkeypatch
):
    """10 s after the first failed try, then twice as long after each one; not every sweep."""

    def timeout(self, request):
        raise ProviderError("Sandbox: timed out.", code="timeout")

    monkeypatch.setattr(SandboxProvider, "create_payment", timeout)
    payment = created(client, api_key, paymentMethods=["BOLETO"])
    charges.update_row(app, payment["id"], created_at=utcnow() - timedelta(minutes=1))
    wait_key = payments_jobs.WAIT_KEY.format(payment["id"])
    with app.app_context():
        for failures in (1, 2, 3):
            assert sweep_payments() == 1
            assert sweep_payments() == 0  # waiting out its backoff
            assert 0 < redis.ttl(wait_key) <= payments_jobs.finalise_wait(failures)
            assert payments_jobs.finalise_wait(failures) == 10 * 2 ** (failures - 1)
            redis.delete(wait_key)  # the wait is over
    assert get(client, api_key, payment["id"]).get_json()["status"] == "PENDING"
    assert payments_jobs.finalise_wait(20) == payments_jobs.MAX_WAIT_SECONDS


def test_a_refusal_midway_withdraws_and_clears_what_was_issued(
    app, redis, client, api_key, monkeypatch, withdrawn
):
    def refuse(self, request):
        raise ProviderRefused("Sandbox: no boletos today.", code="refused")

    monkeypatch.setattr(SandboxProvider, "create_payment", refuse)
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    assert payment["status"] == "REFUSED"
    assert payment["pixCopyPaste"] is None and payment["pixQrCode"] is None
    assert payment["metadata"]["failure"]["providerErrorCode"] == "refused"
    assert [method for method, _ in withdrawn] == ["PIX"]
    status = client.get(f"/v1/payments/{payment['id']}/provider-status", headers=_auth(api_key))
    assert status.get_json()["error"] == "TRANSACTION_HAS_NO_PROVIDER_REFERENCE"


@pytest.mark.postgres
def test_lists_sorted_both_ways_never_deadlock_expiring_rows(
    app, client, api_key, is_postgres, monkeypatch
):
    """Each list expires the overdue rows it read; locking them in its own sort order made
    two lists sorted in opposite directions deadlock (a 500)."""
    ids = [created(client, api_key, amount=1_000 + n)["id"] for n in range(4)]
    for payment_id in ids:
        charges.update_row(app, payment_id, expires_at=utcnow() - timedelta(seconds=1))
    expire = charge_expiry._expire

    def slow_expire(charge, now):
        time_module.sleep(0.2)  # widen the window between one row's lock and the next
        expire(charge, now)

    monkeypatch.setattr(charge_expiry, "_expire", slow_expire)
    barrier = threading.Barrier(2)

    def listing(order: str) -> int:
        with app.test_client() as own:
            barrier.wait()
            query = f"/v1/payments?sortBy=amount&sortOrder={order}"
            return own.get(query, headers={"apikey": api_key}).status_code

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(listing, ["asc", "desc"]))
    assert answers == [200, 200]
    statuses = {get(client, api_key, pid).get_json()["status"] for pid in ids}
    assert statuses == {"EXPIRED"}


def test_a_receipt_lists_merchant_refunds_not_returns_of_a_late_pix(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    pay(client, api_key, payment["id"], method="BOLETO")
    late = client.post(
        f"/v1/sandbox/charges/{payment['id']}/pay", json={}, headers={"apikey": api_key}
    )
    assert late.status_code == 200  # the Pix arrived after the boleto paid: returned
    with app.app_context():
        returned = db.session.scalars(sa.select(Refund)).one()
        assert (returned.automatic, returned.status) == (True, RefundStatus.REFUNDED)
        assert returned.completed_at is not None and returned.method == "PIX"
    receipt = client.get(f"/v1/payments/{payment['id']}/receipt", headers=_auth(api_key))
    pdf = base64.b64decode(receipt.get_json()["base64"])
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    assert "BOLETO" in text or "Boleto" in text
    assert "Refunded" not in text


def test_a_page_by_creation_time_keeps_the_listing_index_order(app, client, api_key):
    """createdAt is never empty, so no NULLS LAST: PostgreSQL's DESC is NULLS FIRST, and the
    clause would make it sort the whole account instead of reading ix_transactions_listing."""
    seen: list[str] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "ORDER BY" in statement and "FROM transactions" in statement:
            seen.append(statement.split("ORDER BY", 1)[1])

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        assert _ids(_list(client, api_key, "")) == []
        assert _ids(_list(client, api_key, "sortBy=paidAt")) == []
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    by_creation, by_payment = seen
    assert "NULLS LAST" not in by_creation.upper()
    assert "NULLS LAST" in by_payment.upper()
