"""Amounts as a Brazilian types them on the dashboard (issue 21): the parser's table of what is
read and what is refused, with why; then the test charge, test payment and payout forms
through real HTTP."""

import html
import re

import pytest
import sqlalchemy as sa

from app.dashboard.forms.fields import MAX_REAIS_LENGTH, to_minor_units
from app.extensions import db
from app.models import Payout, Transaction
from tests.support.dashboard import sign_in
from tests.support.http import count_rows, csrf_token
from tests.support.payouts import funded_merchant

PAYMENTS = "/dashboard/payments"
CHARGES = "/dashboard/charges"
PAYOUTS = "/dashboard/payouts"
AMBIGUOUS = "Is 1.500 thousands, or is the dot a decimal point?"
IN_PAYMENT_CURRENCY = ("the payment's currency", "cents", None)  # AmountField's arguments

READ = [
    ("1.234,56", 123_456),
    ("1234,56", 123_456),
    ("R$ 1.234,56", 123_456),
    ("R$1.234,56", 123_456),
    ("r$ 1.234,56", 123_456),
    ("R$\u00a01.234,56", 123_456),  # a no-break space, as copied from a page
    ("R$   12", 1_200),
    ("  R$ 1.234,56  ", 123_456),
    ("\t12,34\n", 1_234),
    ("1234.56", 123_456),
    ("12", 1_200),
    ("0,5", 50),
    ("0,05", 5),
    ("0,01", 1),
    ("012", 1_200),
    ("1.234.567,89", 123_456_789),
    ("1.234.567", 123_456_700),
    ("1.500,00", 150_000),
    ("1.500,5", 150_050),
    ("1,50", 150),
    ("1.5", 150),
    ("12.3", 1_230),
    ("12.30", 1_230),
    ("0.5", 50),
    ("R$ 9.999.999.999,99", 999_999_999_999),
    ("9999999999,99", 999_999_999_999),
]

REFUSED = [
    # A lone dot before exactly three digits: thousands, or a decimal point?
    ("1.500", "Write 1.500,00 if you mean thousands, or 1,50 if it is a decimal point."),
    ("R$ 1.500", AMBIGUOUS),
    ("12.345", "Write 12.345,00 if you mean thousands; the centavos go after a comma"),
    ("123.000", "Write 123.000,00 if you mean thousands, or 123,00 if it is a decimal point."),
    # English grouping
    ("1,234.56", "Write amounts the Brazilian way"),
    ("1,234,567", "1.234,56, not 1,234.56"),
    ("R$ 1,234.56", "Write amounts the Brazilian way"),
    # Thousands marks not every three digits
    ("1.23,45", "Separate thousands with a dot every three digits"),
    ("1.2345,00", "Separate thousands with a dot every three digits"),
    ("12.34.567", "Separate thousands with a dot every three digits"),
    ("1.234.5", "Separate thousands with a dot every three digits"),
    ("0.123,45", "Separate thousands with a dot every three digits"),
    ("12..3", "Separate thousands with a dot every three digits"),
    # More than two decimals: the comma is always the decimal mark
    ("1,234", "Use at most two decimal places (centavos), like 12,34."),
    ("1,500", "Use at most two decimal places"),
    ("1234.567", "Use at most two decimal places"),
    ("1.2345", "Use at most two decimal places"),
    ("0.500", "Use at most two decimal places"),
    # Zero and negative
    ("0", "Enter an amount greater than zero."),
    ("0,00", "Enter an amount greater than zero."),
    ("R$ 0", "Enter an amount greater than zero."),
    ("-5", "Enter an amount in reais without a minus sign"),
    ("R$ -1.234,56", "without a minus sign"),
    ("-R$ 5", "without a minus sign"),
    ("\u22125", "without a minus sign"),
    # Digits other than 0-9
    ("\uff11\uff12", "Type the amount with the digits 0 to 9"),  # full-width
    ("\u0661\u0662", "Type the amount with the digits 0 to 9"),  # Arabic-Indic
    ("1\u00b2", "Type the amount with the digits 0 to 9"),  # superscript two
    # Other currencies' signs
    ("US$ 10", "This amount is in reais: write R$ 12,34 or just 12,34, without US$."),
    ("\u20ac 10", "without \u20ac."),
    ("\u20ac10", "without \u20ac."),
    ("$10", "without $."),
    ("EUR 10,00", "without EUR."),
    # Spaces inside the number
    ("1 234,56", "Leave out the spaces and separate thousands with dots: 1.234,56."),
    ("R$ 1 234", "Leave out the spaces"),
    ("1\u00a0234,56", "Leave out the spaces"),
    # Not an amount, or an unfinished one
    ("", "Enter an amount in reais, like 12,34."),
    ("   ", "Enter an amount in reais, like 12,34."),
    ("abc", "Enter an amount in reais, like 12,34."),
    ("R$", "Enter an amount in reais, like 12,34."),
    ("R$ R$ 10", "Enter an amount in reais, like 12,34."),
    ("10 R$", "Enter an amount in reais, like 12,34."),
    ("12e3", "Enter an amount in reais, like 12,34."),
    ("+5", "Enter an amount in reais, like 12,34."),
    (",", "Enter an amount in reais, like 12,34."),
    (",5", "Write a zero first, like 0,50."),
    (".50", "Write a zero first, like 0,50."),
    ("12,", "Write the centavos after the comma, like 12,00, or leave the comma out."),
    ("12.", "Write the centavos after a comma, like 12,00, or leave the point out."),
    # Longer than the cap
    ("R$ 999.999.999.999,99", f"at most {MAX_REAIS_LENGTH} characters"),
    ("1" * (MAX_REAIS_LENGTH + 1), f"at most {MAX_REAIS_LENGTH} characters"),
]


@pytest.mark.parametrize(("typed", "minor"), READ)
def test_what_a_brazilian_types_is_read(typed, minor):
    assert to_minor_units(typed) == minor
    assert type(to_minor_units(typed)) is int


@pytest.mark.parametrize(("typed", "message"), REFUSED)
def test_what_is_ambiguous_or_wrong_is_refused_saying_how_to_write_it(typed, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        to_minor_units(typed)


def test_the_cap_fits_the_largest_amount_written_in_full():
    assert len("R$ 9.999.999.999,99") <= MAX_REAIS_LENGTH
    assert to_minor_units("  R$ 9.999.999.999,99  ") == 999_999_999_999  # spaces not counted


def test_an_amount_in_the_payments_currency_takes_no_currency_sign():
    """The field does not know the payment's currency when it reads the text: "R$" on a euro
    payment would be read as euros, so no sign is taken, not even R$ or €."""
    assert to_minor_units("1.234,56", *IN_PAYMENT_CURRENCY) == 123_456
    for typed in ("R$ 10", "\u20ac 10", "US$10"):
        with pytest.raises(ValueError, match="Leave out the currency sign: the amount is in the"):
            to_minor_units(typed, *IN_PAYMENT_CURRENCY)
    with pytest.raises(ValueError, match=re.escape("1,50 if it is a decimal point.")):
        to_minor_units("1.500", *IN_PAYMENT_CURRENCY)
    with pytest.raises(ValueError, match=re.escape("Use at most two decimal places (cents)")):
        to_minor_units("1,234", *IN_PAYMENT_CURRENCY)


# Through the dashboard


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _form(client, page: str, prefix: str = "", **fields) -> dict:
    """The form on `page` as rendered (CSRF token, idempotency key), with `fields` filled in."""
    text = client.get(page).get_data(as_text=True)
    key = re.search(
        rf'id="{prefix}idempotency_key" name="idempotency_key" type="hidden" value="([0-9a-f]+)"',
        text,
    )
    assert key, f"no {prefix}form on {page}"
    return {"csrf_token": csrf_token(text), "idempotency_key": key.group(1), **fields}


def test_a_test_charge_of_r_1_234_56_is_123456_centavos(app, client, owner):
    sign_in(client, owner)
    response = client.post(CHARGES, data=_form(client, PAYMENTS, "charge-", amount="R$ 1.234,56"))
    assert response.status_code == 303
    with app.app_context():
        assert db.session.scalar(sa.select(Transaction.amount)) == 123_456
    assert "R$1,234.56" in _text(client.get(response.headers["Location"]))


def test_an_ambiguous_test_charge_is_shown_back_with_why_and_nothing_is_created(app, client, owner):
    sign_in(client, owner)
    response = client.post(CHARGES, data=_form(client, PAYMENTS, "charge-", amount="1.500"))
    assert response.status_code == 400
    text = _text(response)
    assert 'id="charge-amount-error"' in text
    assert f"{AMBIGUOUS} Write 1.500,00 if you mean thousands, or 1,50 if it is" in text
    assert re.search(r'<input[^>]*id="charge-amount"[^>]*value="1\.500"', text), "not shown back"
    assert count_rows(app, Transaction) == 0


def test_a_test_payment_reads_brazilian_notation_and_refuses_a_sign(app, client, owner):
    sign_in(client, owner)
    refused = client.post(
        PAYMENTS,
        data=_form(client, PAYMENTS, amount="R$ 10", currency="BRL", payment_methods="PIX"),
    )
    assert refused.status_code == 400
    text = _text(refused)
    assert "Leave out the currency sign: the amount is in the payment's currency" in text
    assert re.search(r'<input[^>]*id="amount"[^>]*value="R\$ 10"', text), "not shown back"
    assert count_rows(app, Transaction) == 0
    created = client.post(
        PAYMENTS,
        data=_form(client, PAYMENTS, amount="1.234,56", currency="BRL", payment_methods="PIX"),
    )
    assert created.status_code == 303
    with app.app_context():
        assert db.session.scalar(sa.select(Transaction.amount)) == 123_456


def test_a_payout_reads_reais_with_the_sign(app, client, monkeypatch):
    merchant = funded_merchant(app, client, monkeypatch)  # R$ 1.000,00 available
    sign_in(client, merchant.member)
    text = client.get(PAYOUTS).get_data(as_text=True)
    data = {
        "csrf_token": csrf_token(text),
        "idempotency_key": re.search(
            r'name="idempotency_key" type="hidden" value="([0-9a-f]+)"', text
        ).group(1),
        "mode": re.search(r'name="mode" type="hidden" value="(test|live)"', text).group(1),
        "pix_key": "ana@example.com",
        "pix_key_type": "EMAIL",
    }
    ambiguous = client.post(PAYOUTS, data={**data, "amount": "1.000"})
    assert ambiguous.status_code == 400
    assert "Is 1.000 thousands, or is the dot a decimal point?" in _text(ambiguous)
    assert count_rows(app, Payout) == 0
    assert client.post(PAYOUTS, data={**data, "amount": "R$ 250,5"}).status_code == 303
    with app.app_context():
        assert db.session.scalar(sa.select(Payout.amount)) == 25_050
