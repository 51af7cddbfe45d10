"""Amounts in refusal messages are written as money, never as raw minor units: with the
currency's code and a decimal point on the API ("BRL 1000.00", in English), and on the
dashboard in the reader's language and notation ("R$ 1.000,00"); the error codes stay the
contract's."""

import html
import re

import pytest

from tests.support.dashboard import sign_in
from tests.support.http import assert_error, csrf_token
from tests.support.payments import refund
from tests.support.payouts import funded_merchant, request, set_account
from tests.support.refunds import fund, paid_payment
from tests.support.refunds import merchant as make_refund_merchant


@pytest.fixture
def merchant(app, client, monkeypatch):
    return funded_merchant(app, client, monkeypatch)  # BRL 1000.00 available


def test_an_uncovered_payout_names_the_balance_and_the_total_as_money(app, client, merchant):
    response = request(client, merchant, amount=100_001)  # + BRL 1.00 Pix payout fee
    error = assert_error(response, 400, "invalid_request_error", "insufficient_funds", "amount")
    assert error["message"] == (
        "The available balance (BRL 1000.00) does not cover the amount plus fee (BRL 1001.01)."
    )


def test_the_contract_caps_are_written_as_money(app, client, merchant):
    set_account(app, merchant.member.account_id, payout_transaction_cap=20_000)
    over = request(client, merchant, amount=20_001)
    error = assert_error(over, 400, "invalid_request_error", "payout_amount_limit_exceeded")
    assert "at most BRL 200.00 under this account's contract" in error["message"]
    set_account(app, merchant.member.account_id, payout_daily_cap=30_000)
    assert request(client, merchant, amount=20_000).status_code == 201
    daily = request(client, merchant, amount=10_001)
    error = assert_error(daily, 400, "invalid_request_error", "payout_daily_limit_exceeded")
    assert error["message"].endswith("the daily limit of BRL 300.00.")


def test_a_payout_below_its_fee_names_the_fee_as_money(client, merchant):
    response = request(client, merchant, amount=100)
    error = assert_error(response, 400, "invalid_request_error", "invalid_amount", "amount")
    assert error["message"] == "The amount must be more than the payout fee (BRL 1.00)."


@pytest.mark.parametrize(
    ("language", "refusal"),
    [
        (
            "en",
            "The available balance (R$1,000.00) does not cover the amount plus fee (R$1,001.00).",
        ),
        (
            "pt-BR",
            "O saldo disponível (R$\u00a01.000,00) não cobre o valor mais a tarifa "
            "(R$\u00a01.001,00).",
        ),
    ],
)
def test_the_dashboard_shows_the_refusal_in_its_readers_words(client, merchant, language, refusal):
    sign_in(client, merchant.member)
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = language
    page = client.get("/dashboard/payouts").get_data(as_text=True)
    key = re.search(r'name="idempotency_key" type="hidden" value="([0-9a-f]+)"', page).group(1)
    response = client.post(
        "/dashboard/payouts",
        data={
            "csrf_token": csrf_token(page),
            "idempotency_key": key,
            "mode": "test",
            "amount": "1000,00",
            "pix_key": "ana@example.com",
            "pix_key_type": "EMAIL",
        },
    )
    assert response.status_code == 400
    text = html.unescape(response.get_data(as_text=True))
    assert refusal in text
    assert "100000" not in text


def test_an_over_refund_names_what_remains_as_money(app, redis, client, monkeypatch):
    refunder = make_refund_merchant(app, monkeypatch)
    payment = paid_payment(app, redis, client, refunder, amount=30_000)
    fund(app, client, refunder, 1_000_000)
    response = refund(client, refunder.api_key, payment["id"], amount=30_001)
    error = assert_error(response, 400, "invalid_request_error", "refund_exceeds_refundable")
    assert error["message"] == "At most BRL 300.00 of this transaction can still be refunded."
