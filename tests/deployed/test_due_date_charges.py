"""A charge with a due date through the Procfile's stack (issue 24), on its public host: the
body's numbers (a percentage with a decimal point) reach the service exactly through
gunicorn, the location answers a payer's bank with the amount for the day it asks (`DPP`),
the checkout shows today's breakdown, and the sandbox payment is credited at today's
amount and announced by a signed `charge.paid` webhook carrying it."""

import json
import uuid
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import pytest

from app.business_days import SAO_PAULO
from app.pix import brcode, due
from tests.support.charges import CPF
from tests.support.deployed import created
from tests.support.receiver import receiving

pytestmark = pytest.mark.slow

ORIGINAL = 100_000
WAIT_SECONDS = 30


def _terms() -> dict:
    """Due in a week, with every kind of option, a percentage with a decimal point among them."""
    today = datetime.now(SAO_PAULO).date()
    return {
        "date": (today + timedelta(days=7)).isoformat(),
        "days_valid_after": 3,
        "fine": {"type": "percent", "value": 2.5},
        "interest": {"type": "percent_month", "value": 1},
        "discounts": {"type": "fixed_day", "value": 100},
        "rebate": {"type": "fixed", "value": 1_000},
    }


def _stored(terms: dict) -> dict:
    """The terms as the service keeps them (`due.to_json`: a percentage as a string)."""
    return {**terms, "fine": {"type": "percent", "value": "2.5"}}


def _asked_on(terms: dict, day) -> due.AmountDue:
    return due.amount_due(ORIGINAL, due.from_json(_stored(terms)), day)


def test_a_charge_with_a_due_date_is_served_paid_and_announced(deployed):
    terms = _terms()
    today = datetime.now(SAO_PAULO).date()
    expected_today = _asked_on(terms, today)
    with receiving() as receiver:
        created(
            deployed.api(
                "POST",
                "/v1/webhooks/endpoints",
                json={"url": receiver.url, "events": ["charge.paid"]},
            )
        )
        charge = created(
            deployed.api(
                "POST",
                "/v1/charges",
                headers={"Idempotency-Key": uuid.uuid4().hex},
                json={
                    "amount": ORIGINAL,
                    "payment_method": "pix",
                    "customer": {"name": "Ana Souza", "document": CPF},
                    "due": terms,
                },
            )
        )
        assert charge["due"]["fine"] == {"type": "percent", "value": 2.5}
        assert charge["due"]["amount_due"]["total"] == expected_today.total

        code = brcode.parse(charge["pix"]["br_code"])
        assert code.amount_cents is None
        location = urlsplit(f"https://{code.location}").path
        late_day = due.effective_due_date(due.from_json(_stored(terms))) + timedelta(days=1)
        late = deployed.request("GET", f"{location}?DPP={late_day.isoformat()}")
        assert late.status_code == 200, late.text
        assert late.json()["valor"]["final"] == brcode.format_amount(
            _asked_on(terms, late_day).total
        )

        checkout = deployed.request("GET", deployed.path(charge["checkout_url"]))
        assert checkout.status_code == 200
        assert "due-breakdown" in checkout.text

        paid = deployed.api("POST", f"/v1/sandbox/charges/{charge['id']}/pay", json={})
        assert paid.status_code == 200, paid.text
        assert (paid.json()["status"], paid.json()["amount"]) == ("paid", expected_today.total)
        deployed.wait_for(lambda: receiver.received, WAIT_SECONDS, "the charge.paid webhook")

    event = json.loads(receiver.received[0].body)
    assert event["type"] == "charge.paid"
    announced = event["data"]["object"]
    assert (announced["id"], announced["amount"]) == (charge["id"], expected_today.total)
    assert announced["due"]["amount_due"]["total"] == expected_today.total
