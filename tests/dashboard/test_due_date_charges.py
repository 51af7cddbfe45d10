"""Charges with a due date in the dashboard (issue 24): the test charge form's due-date
options, the list's amount due today and due-date filter, the payment page's terms and
breakdown, and the CSV's due-date columns. The clock is set to Tuesday 2026-12-01 in São
Paulo, so the amounts are the worked examples':

R$ 1.000,00 due Thursday 2026-12-10, 5 days valid after, fine 2 %, interest 1 % a month,
5 % off until 2026-12-05, R$ 10,00 rebate. On 2026-12-01: 1 000,00 - 10,00 - 50,00 = 940,00.
"""

import csv
import html
import io
import re
from datetime import datetime

import pytest
import sqlalchemy as sa
import time_machine

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import Transaction
from tests.support.charges import CPF
from tests.support.dashboard import post_form, sign_in
from tests.support.http import count_rows, csrf_token

PAYMENTS = "/dashboard/payments"
FORM = {
    "amount": "1.000,00",
    "customer_name": "Ana Souza",
    "customer_document": CPF,
    "due_date": "2026-12-10",
    "days_valid_after": "5",
    "fine_type": "percent",
    "fine_value": "2",
    "interest_type": "percent_month",
    "interest_value": "1",
    "discount_type": "percent",
    "discount_value": "5",
    "discount_until": "2026-12-05",
    "rebate_type": "fixed",
    "rebate_value": "10,00",
}


@pytest.fixture(autouse=True)
def tuesday():
    with time_machine.travel(datetime(2026, 12, 1, 12, tzinfo=SAO_PAULO), tick=True):
        yield


@pytest.fixture
def signed_in(client, owner):
    sign_in(client, owner)
    return owner


def _create(client, **changes):
    page = client.get(PAYMENTS).get_data(as_text=True)
    key = re.search(
        r'id="charge-idempotency_key" name="idempotency_key" type="hidden" value="([0-9a-f]+)"',
        page,
    ).group(1)
    data = {"csrf_token": csrf_token(page), "idempotency_key": key, **FORM, **changes}
    return client.post("/dashboard/charges", data={k: v for k, v in data.items() if v is not None})


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def test_the_form_creates_a_charge_with_a_due_date_shown_on_its_page(app, client, signed_in):
    response = _create(client)
    assert response.status_code == 303, _text(response)
    with app.app_context():
        charge = db.session.scalar(sa.select(Transaction))
        assert (charge.amount, charge.due_original_amount) == (100_000, 100_000)
        assert charge.due_terms == {
            "date": "2026-12-10",
            "days_valid_after": 5,
            "fine": {"type": "percent", "value": 2},
            "interest": {"type": "percent_month", "value": 1},
            "discounts": [{"until": "2026-12-05", "type": "percent", "value": 5}],
            "rebate": {"type": "fixed", "value": 1_000},
        }
    page = _text(client.get(response.headers["Location"]))
    assert "Due date and amount due" in page
    assert "<dt>Due date</dt><dd>10/12/2026</dd>" in page
    assert "<dt>Payable until</dt><dd>15/12/2026</dd>" in page
    assert "2%" in page and "1% per month" in page and "5% until 05/12/2026" in page
    assert "Amount due today (01/12/2026)" in page
    assert "<strong>R$940.00</strong>" in page


def test_the_page_reads_in_portuguese(app, client, signed_in):
    location = _create(client).headers["Location"]
    post_form(client, PAYMENTS, "/dashboard/language", {"locale": "pt_BR", "next": PAYMENTS})
    page = _text(client.get(location))
    assert "<dt>Vencimento</dt><dd>10/12/2026</dd>" in page
    assert "Multa por atraso" in page and "Juros" in page and "Abatimento" in page
    assert "R$\u00a0940,00" in page


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"fine_value": "100"}, "fine_value", "A percentage is more than 0 and less than 100."),
        ({"fine_value": "2,555"}, "fine_value", "Enter a percentage with at most two decimal"),
        ({"rebate_value": "abc"}, "rebate_value", "Enter an amount in reais"),
        ({"discount_until": None}, "discount_until", "Enter the last day the discount applies."),
        (
            {"discount_until": "2026-12-11"},
            "discount_until",
            "A discount's date must not be after the due date.",
        ),
        ({"due_date": None}, "due_date", "Enter the due date that the fine, interest or"),
        ({"due_date": "2026-11-30"}, "due_date", "The due date must not be before today."),
        ({"customer_document": None}, "customer_document", "needs the customer's CPF or CNPJ"),
        ({"fine_type": "", "fine_value": "2"}, "fine_type", "Choose what this value is"),
        (
            {"discount_type": "fixed_day", "discount_value": "1,00"},
            "discount_until",
            "Only a discount until a date takes a date",
        ),
    ],
)
def test_each_rule_shows_beside_its_field_and_nothing_is_created(
    app, client, signed_in, changes, field, message
):
    response = _create(client, **changes)
    assert response.status_code == 400
    text = _text(response)
    assert f'id="charge-{field}-error"' in text, text
    assert message in text
    assert count_rows(app, Transaction) == 0


def test_the_list_shows_todays_amount_and_filters_by_due_date(client, signed_in):
    assert _create(client).status_code == 303
    no_discount = {"discount_type": None, "discount_value": None, "discount_until": None}
    assert _create(client, due_date="2026-12-20", **no_discount).status_code == 303
    listed = _text(client.get(PAYMENTS))
    assert "R$940.00" in listed and "due 10/12/2026" in listed
    assert "R$990.00" in listed and "due 20/12/2026" in listed

    first = _text(client.get(f"{PAYMENTS}?dueFrom=2026-12-01&dueUntil=2026-12-15"))
    assert "due 10/12/2026" in first and "due 20/12/2026" not in first
    later = _text(client.get(f"{PAYMENTS}?dueFrom=16/12/2026"))
    assert "due 20/12/2026" in later and "due 10/12/2026" not in later

    wrong = client.get(f"{PAYMENTS}?dueFrom=2026-12-20&dueUntil=2026-12-01")
    assert wrong.status_code == 400
    assert 'id="due-from-error"' in _text(wrong)


def test_the_csv_has_the_due_date_columns(client, signed_in):
    assert _create(client).status_code == 303
    response = client.get(f"{PAYMENTS}/export.csv?dueFrom=2026-12-10")
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert len(rows) == 1
    row = rows[0]
    assert (row["due_date"], row["due_last_payable_date"]) == ("2026-12-10", "2026-12-15")
    assert (row["due_original_amount"], row["due_amount_today"]) == ("100000", "94000")
