"""The checkout pages of the other methods through HTTP: each method's instructions on the
payer's page, the printable boleto (`boletoPdfUrl`), the sandbox card page
(`cardRedirectUrl`) that approves or declines and returns to `metadata.returnUrl`, and the
test-mode buttons that pay by a chosen method."""

import io
from urllib.parse import urlparse

import pytest
from pypdf import PdfReader

from app.methods import boleto
from app.models import KeyMode
from tests.support import factories
from tests.support.http import csrf_token
from tests.support.payments import finalised, get

RETURN_URL = "https://shop.example.com/orders/42/done"


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app, "Padaria Sol"))


def _path(url: str) -> str:
    return urlparse(url).path


def _checkout(payment: dict) -> str:
    return f"/checkout/{payment['id']}"


def test_the_page_shows_every_offered_methods_instructions(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    html = client.get(_checkout(payment)).get_data(as_text=True)
    assert payment["pixCopyPaste"] in html
    assert payment["boletoLine"] in html
    assert _path(payment["boletoPdfUrl"]) in html
    assert "Simulate payment by Pix" in html and "Simulate payment by Boleto" in html


def test_multibanco_and_crypto_instructions(app, redis, client, api_key):
    multibanco = finalised(
        app, redis, client, api_key, paymentMethods=["MULTIBANCO"], currency="EUR"
    )
    html = client.get(_checkout(multibanco)).get_data(as_text=True)
    reference = multibanco["mbReference"]
    assert multibanco["mbEntity"] in html
    assert f"{reference[:3]} {reference[3:6]} {reference[6:]}" in html
    crypto = finalised(app, redis, client, api_key, paymentMethods=["CRYPTO"], currency="USDT")
    html = client.get(_checkout(crypto)).get_data(as_text=True)
    assert crypto["cryptoAddress"] in html and "250.00 USDT" in html and "BSC" in html


def test_the_boleto_slip_is_a_pdf_with_the_line_and_the_barcode(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["BOLETO"])
    response = client.get(_path(payment["boletoPdfUrl"]))
    assert response.status_code == 200
    assert response.mimetype == "application/pdf"
    text = PdfReader(io.BytesIO(response.data)).pages[0].extract_text()
    assert boleto.formatted_line(payment["boletoLine"]) in text
    assert "R$\u00a0250,00" in text and "Padaria Sol" in text  # in the account's pt_BR


def test_no_boleto_slip_for_a_payment_without_one(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX"])
    assert client.get(f"/checkout/{payment['id']}/boleto.pdf").status_code == 404
    assert client.get("/checkout/unknown/boleto.pdf").status_code == 404


def _card(app, redis, client, api_key, metadata=None) -> dict:
    return finalised(
        app,
        redis,
        client,
        api_key,
        paymentMethods=["CREDIT_CARD"],
        currency="EUR",
        metadata={"returnUrl": RETURN_URL} if metadata is None else metadata,
    )


def _answer_card(client, payment: dict, outcome: str):
    page = client.get(_path(payment["cardRedirectUrl"]))
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "€250.00" in html
    return client.post(
        _path(payment["cardRedirectUrl"]),
        data={"csrf_token": csrf_token(html), "outcome": outcome},
    )


def test_an_approved_test_card_pays_and_returns_to_the_merchant(app, redis, client, api_key):
    payment = _card(app, redis, client, api_key)
    response = _answer_card(client, payment, "approve")
    assert response.status_code == 303
    assert response.headers["Location"] == RETURN_URL
    paid = get(client, api_key, payment["id"]).get_json()
    assert (paid["status"], paid["paidWith"]) == ("APPROVED", "CREDIT_CARD")


def test_a_declined_test_card_refuses_the_payment(app, redis, client, api_key):
    payment = _card(app, redis, client, api_key, metadata={})
    response = _answer_card(client, payment, "decline")
    assert response.status_code == 303
    assert response.headers["Location"].endswith(_checkout(payment))
    refused = get(client, api_key, payment["id"]).get_json()
    assert refused["status"] == "REFUSED"
    assert refused["metadata"]["failure"]["providerErrorCode"] == "declined"


def test_the_card_page_needs_its_csrf_token(app, redis, client, api_key):
    payment = _card(app, redis, client, api_key)
    response = client.post(_path(payment["cardRedirectUrl"]), data={"outcome": "approve"})
    assert response.status_code == 400
    assert get(client, api_key, payment["id"]).get_json()["status"] == "WAITING_PAYMENT"


def test_no_card_page_for_other_methods_or_live_payments(app, redis, client, api_key):
    pix = finalised(app, redis, client, api_key, paymentMethods=["PIX"])
    assert client.get(f"/checkout/{pix['id']}/card").status_code == 404
    account_id = factories.make_account(app)
    live_key = factories.make_api_key(app, account_id, KeyMode.LIVE)
    refused = client.post(
        "/v1/payments",
        json={"amount": 100, "paymentMethods": ["CREDIT_CARD"], "idempotencyKey": "live-card-1"},
        headers={"apikey": live_key},
    )
    assert refused.status_code == 422


def test_the_test_mode_button_pays_by_the_chosen_method(app, redis, client, api_key):
    payment = finalised(app, redis, client, api_key, paymentMethods=["PIX", "BOLETO"])
    html = client.get(_checkout(payment)).get_data(as_text=True)
    response = client.post(
        f"/checkout/{payment['id']}/simulate-payment",
        data={"csrf_token": csrf_token(html), "method": "BOLETO"},
    )
    assert response.status_code == 303
    paid = get(client, api_key, payment["id"]).get_json()
    assert (paid["status"], paid["paidWith"]) == ("PAID", "BOLETO")
    assert "Payment received" in client.get(_checkout(payment)).get_data(as_text=True)


def test_no_payment_button_before_the_payment_is_finalised(app, client, api_key):
    response = client.post(
        "/v1/payments",
        json={"amount": 100, "paymentMethods": ["BOLETO"], "idempotencyKey": "not-finalised-1"},
        headers={"apikey": api_key},
    )
    html = client.get(f"/checkout/{response.get_json()['id']}").get_data(as_text=True)
    assert "Simulate payment" not in html
