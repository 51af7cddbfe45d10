"""The hosted checkout speaks the payer's language: a Brazilian account's page is in
Portuguese for a browser that asks for it, and for one that asks for no language at all (the
account's own then). Needs the compiled catalogs (app/translations)."""

import uuid
from urllib.parse import urlparse

import pytest

from tests.support import factories

MERCHANT = "Padaria Sol"


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app, MERCHANT, country="BR"))


def _checkout_path(client, api_key: str) -> str:
    response = client.post(
        "/v1/charges",
        json={"amount": 123456, "payment_method": "pix", "description": "Pedido 42"},
        headers={"apikey": api_key, "Idempotency-Key": f"language-{uuid.uuid4().hex}"},
    )
    assert response.status_code == 201, response.json
    return urlparse(response.json["checkout_url"]).path


@pytest.mark.parametrize("accept_language", ["pt-BR", ""], ids=["pt-BR", "none"])
def test_a_brazilian_accounts_checkout_is_in_portuguese(client, api_key, accept_language):
    path = _checkout_path(client, api_key)
    response = client.get(path, headers={"Accept-Language": accept_language})
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert '<html lang="pt-BR">' in html
    assert "Aguardando pagamento" in html and "Waiting for payment" not in html
    assert "R$\u00a01.234,56" in html
    assert "Pagar com Pix" in html and "Pagamentos processados pela Acme Pay" in html


def test_an_english_browser_reads_the_same_checkout_in_english(client, api_key):
    path = _checkout_path(client, api_key)
    html = client.get(path, headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert '<html lang="en">' in html
    assert "Waiting for payment" in html and "R$1,234.56" in html
