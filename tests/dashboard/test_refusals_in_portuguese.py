"""A service's refusal reaches a person in their language (`templating.refusal_text`): the
dashboard and the HTML error page translate the message the service marked, and write its
values (amounts, statuses, ids) as the reader reads them, while the JSON API answers the same
refusal in English with the contract's code."""

import html
import re

from app.errors import Conflict, InvalidRequest
from app.formats.money import Amount
from app.marks import translatable
from app.models import PayoutStatus
from app.templating import refusal_text
from tests.support import factories
from tests.support.dashboard import post_form, sign_in
from tests.support.http import assert_error, csrf_token
from tests.support.payments import created
from tests.support.payouts import funded_merchant

WEBHOOKS = "/dashboard/webhooks"
PAYOUTS = "/dashboard/payouts"


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def test_a_url_taken_is_refused_in_portuguese_naming_the_endpoint(client, owner):
    sign_in(client, owner)
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "pt-BR"
    form = {"url": "http://localhost:9000/hooks", "events": ["charge.created"]}
    assert post_form(client, WEBHOOKS, WEBHOOKS, form).status_code == 201
    again = post_form(client, WEBHOOKS, WEBHOOKS, form)
    assert again.status_code == 409
    text = _text(again)
    assert "O endpoint de webhook " in text and " já usa esta URL; cada URL tem" in text
    assert "already has this URL" not in text


def test_amounts_and_statuses_in_a_refusal_are_written_for_the_reader(app):
    refusal = Conflict(
        translatable("Only a PENDING withdrawal can be approved; this one is %(status)s."),
        values={"status": PayoutStatus.APPROVED},
    )
    short = InvalidRequest(
        translatable("The amount must be more than the payout fee (%(fee)s)."),
        values={"fee": Amount(100, "BRL")},
    )
    assert refusal.message.endswith("this one is APPROVED.")  # what the API answers
    assert short.message == "The amount must be more than the payout fee (BRL 1.00)."
    with app.test_request_context(headers={"Accept-Language": "pt-PT"}):
        assert refusal_text(refusal) == (
            "Só um levantamento pendente pode ser aprovado; este tem o estado Aprovado."
        )
        assert refusal_text(short) == (
            "O valor tem de ser superior à comissão do levantamento (1,00\u00a0R$)."
        )
    assert refusal_text(None) is None


def test_the_api_keeps_the_english_and_its_code(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    payment = created(client, key)
    response = client.post(
        f"/v1/payments/{payment['id']}/refund",
        json={"idempotencyKey": "k" * 16},
        headers={"apikey": key, "Accept-Language": "pt-BR"},
    )
    error = assert_error(response, 409, "conflict_error", "transaction_not_refundable")
    assert error["message"] == (
        "Only PAID or APPROVED transactions can be refunded; this one is PENDING."
    )


def test_the_error_page_speaks_the_readers_language(client, owner):
    sign_in(client, owner)
    missing = client.get("/dashboard/no-such-page", headers={"Accept-Language": "pt-BR"})
    assert missing.status_code == 404
    assert "404 · Página ou recurso não encontrado." in _text(missing)
    english = client.get("/dashboard/no-such-page")
    assert "404 · No such route or resource." in _text(english)
    payment = client.get(
        "/dashboard/payments/tx_00000000-0000-4000-8000-000000000000",
        headers={"Accept-Language": "pt-BR"},
    )
    assert payment.status_code == 404 and "404 · Cobrança não encontrada." in _text(payment)


def test_a_pix_keys_problems_are_in_portuguese_on_the_payout_form(app, client, monkeypatch):
    merchant = funded_merchant(app, client, monkeypatch)
    sign_in(client, merchant.member)
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "pt-BR"
    page = client.get(PAYOUTS).get_data(as_text=True)
    key = re.search(r'name="idempotency_key" type="hidden" value="([0-9a-f]+)"', page)[1]
    response = client.post(
        PAYOUTS,
        data={
            "csrf_token": csrf_token(page),
            "idempotency_key": key,
            "mode": "test",
            "amount": "100,00",
            "pix_key": "529.982.247-24",
            "pix_key_type": "CPF",
        },
    )
    assert response.status_code == 400
    assert "Chave Pix inválida: Os dígitos verificadores do CPF estão errados." in _text(response)
