"""Figures on the dashboard as a Brazilian merchant reads them (issue 21): a CPF or CNPJ
punctuated as it is printed (the alphanumeric CNPJ too), a document stored masked or not a
valid CPF or CNPJ shown exactly as stored, and a success rate with a decimal comma, while the
JSON API keeps the raw document and the rate as a number."""

import html
import uuid

from app.models import Role, Transaction
from tests.support import charges, factories
from tests.support import disputes as d
from tests.support.dashboard import sign_in
from tests.support.refunds import merchant
from tests.support.rows import update_row

PAYMENTS = "/dashboard/payments"
CPF, SHOWN_CPF = "52998224725", "529.982.247-25"
ALPHANUMERIC_CNPJ, SHOWN_CNPJ = "12ABC34501DE35", "12.ABC.345/01DE-35"
MASKED = "***.982.247-**"


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    return html.unescape(response.get_data(as_text=True))


def _charge(client, api_key: str, **body) -> dict:
    response = client.post(
        "/v1/charges",
        json={"amount": 12345, "payment_method": "pix", **body},
        headers={"apikey": api_key, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_a_payment_shows_the_customer_and_payer_lock_documents_punctuated(app, client, owner):
    api_key = factories.make_api_key(app, owner.account_id)
    sign_in(client, owner)
    for stored, shown in ((CPF, SHOWN_CPF), (ALPHANUMERIC_CNPJ, SHOWN_CNPJ)):
        charge = _charge(
            client,
            api_key,
            customer={"name": "Loja Exemplo", "document": stored},
            expected_payer_tax_id=stored,
        )
        text = _text(client.get(f"{PAYMENTS}/{charge['id']}?mode=test"))
        assert text.count(f'<dd class="mono">{shown}</dd>') == 2, stored  # customer, lock
        api = charges.get(client, api_key, charge["id"]).get_json()
        assert api["expected_payer_tax_id"] == stored  # the API keeps what was sent


def test_a_masked_or_invalid_document_is_shown_as_stored(app, client, owner):
    api_key = factories.make_api_key(app, owner.account_id)
    charge = _charge(client, api_key, customer={"name": "Ana", "document": CPF})
    sign_in(client, owner)
    for stored in (MASKED, "52998224724"):  # masked by the bank; wrong check digits
        update_row(app, Transaction, charges.raw(charge["id"]), customer_document=stored)
        text = _text(client.get(f"{PAYMENTS}/{charge['id']}?mode=test"))
        assert f'<dd class="mono">{stored}</dd>' in text, stored


def test_a_dispute_shows_the_payer_document_punctuated_or_as_masked(app, client, monkeypatch):
    shop = merchant(app, monkeypatch)
    sign_in(client, factories.make_member(app, shop.account_id, Role.OWNER))
    for reported, shown in ((CPF, SHOWN_CPF), (MASKED, MASKED)):
        charge = d.paid_charge(app, client, shop)
        case = d.opened(client, shop, charge["id"], payer_name="Ana", payer_document=reported)
        text = _text(client.get(f"/dashboard/disputes/{case['id']}?mode=test"))
        assert f'<span class="mono">{shown}</span>' in text, reported


def test_the_success_rate_has_a_decimal_comma_and_the_api_a_number(app, client, owner):
    """In Portuguese 33,3% (in English 33.3%); the API keeps the fraction."""
    api_key = factories.make_api_key(app, owner.account_id)
    paid, _, _ = (_charge(client, api_key) for _ in range(3))
    assert charges.pay(client, api_key, paid["id"]).status_code == 200
    sign_in(client, owner)
    stats = f"{PAYMENTS}/stats?days=7"
    text = _text(client.get(stats, headers={"Accept-Language": "pt-BR"}))
    assert '<p class="figure">33,3%</p>' in text
    assert "33.3%" not in text
    assert '<p class="figure">33.3%</p>' in _text(client.get(stats))
    api = client.get("/v1/payments/stats?days=7", headers={"apikey": api_key}).get_json()
    assert api["successRate"] == 0.3333
