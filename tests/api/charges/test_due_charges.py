"""Pix charges with a due date (issue 24) through the API: creation with every rule, the
amount due shown and served on a day, and settlement on the day the Pix is made, on time,
late within `days_valid_after` and after it. The clock is moved with time-machine, so the
days are the calendar's, not today's.

Worked example used throughout (R$ 1.000,00 due Thursday 2026-12-10, valid 5 days after):
- paid 2026-12-01 (9 days early): discount 9 x R$ 1,00 = 900, rebate R$ 20,00 → 97 100;
- paid 2026-12-10: rebate only → 98 000;
- paid 2026-12-15 (5 days late): fine 2 % = 2 000, interest 1 % a month x 5/30 of
  100 000 = 166,67 → 167, rebate 2 000 → 100 167;
- 2026-12-15 + 0 is the last payable day; on 2026-12-16 the charge has expired.
"""

from datetime import datetime
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
import time_machine

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import LedgerEntry, LedgerPosting, ReceivedPix
from app.pix import brcode
from tests.support import factories
from tests.support.charges import CPF, create, created, get, pay, raw
from tests.support.http import assert_error

CREATED = datetime(2026, 12, 1, 10, 0, tzinfo=SAO_PAULO)
DUE = {
    "date": "2026-12-10",
    "days_valid_after": 5,
    "fine": {"type": "percent", "value": 2},
    "interest": {"type": "percent_month", "value": 1},
    "discounts": {"type": "fixed_day", "value": 100},
    "rebate": {"type": "fixed", "value": 2000},
}
PAYER = {"name": "Ana Souza", "document": CPF}


def _at(day: int, hour: int = 12):
    return time_machine.travel(datetime(2026, 12, day, hour, 0, tzinfo=SAO_PAULO), tick=False)


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


@pytest.fixture
def charge(client, api_key) -> dict:
    with time_machine.travel(CREATED, tick=False):
        return created(client, api_key, amount=100_000, customer=PAYER, due=DUE)


def test_a_charge_with_a_due_date_shows_its_terms_and_todays_amount(charge):
    assert charge["status"] == "pending"
    assert charge["amount"] == 100_000
    assert charge["due"] == {
        **DUE,
        "discounts": {"type": "fixed_day", "value": 100},
        "original_amount": 100_000,
        "last_payable_date": "2026-12-15",
        "amount_due": {
            "date": "2026-12-01",
            "original": 100_000,
            "rebate": 2_000,
            "discount": 900,
            "fine": 0,
            "interest": 0,
            "total": 97_100,
        },
    }
    assert charge["pix"]["expires_at"].startswith("2026-12-16T03:00:00")  # midnight, UTC-3


def test_the_amount_due_follows_the_day_it_is_read(client, api_key, charge):
    with _at(10):
        assert get(client, api_key, charge["id"]).get_json()["due"]["amount_due"]["total"] == 98_000
    with _at(15, hour=23):
        due = get(client, api_key, charge["id"]).get_json()["due"]["amount_due"]
    assert (due["fine"], due["interest"], due["total"]) == (2_000, 167, 100_167)


def test_paying_early_credits_the_discounted_amount(app, client, api_key, charge):
    with _at(1):
        paid = pay(client, api_key, charge["id"]).get_json()
    assert paid["status"] == "paid"
    assert paid["amount"] == 97_100
    assert paid["due"]["amount_due"]["total"] == 97_100
    assert _settled(app, charge["id"]) == -97_100


def test_a_late_payment_within_the_validity_is_credited_with_fine_and_interest(
    app, client, api_key, charge
):
    with _at(15):
        refused = pay(client, api_key, charge["id"], amount=98_000).get_json()
        assert refused["status"] == "pending"  # the due date's amount is not today's
        paid = pay(client, api_key, charge["id"]).get_json()
    assert paid["status"] == "paid"
    assert paid["amount"] == 100_167
    assert paid["due"]["amount_due"] == {
        "date": "2026-12-15",
        "original": 100_000,
        "rebate": 2_000,
        "discount": 0,
        "fine": 2_000,
        "interest": 167,
        "total": 100_167,
    }
    assert _settled(app, charge["id"]) == -100_167
    with app.app_context():
        outcomes = db.session.scalars(sa.select(ReceivedPix.outcome)).all()
    assert sorted(outcomes) == ["credited", "refused_amount"]


def test_after_the_last_payable_day_the_charge_expires_and_a_pix_is_returned(
    app, client, api_key, charge
):
    with _at(16, hour=0):
        expired = get(client, api_key, charge["id"]).get_json()
        assert expired["status"] == "expired"
        assert expired["metadata"]["failure"]["providerErrorCode"] == "expired"
        assert "ttlSeconds" not in expired["metadata"]["failure"]  # it chose no lifetime
        assert expired["due"]["amount_due"] is None  # no day's amount applies any more
        returned = pay(client, api_key, charge["id"]).get_json()
    assert returned["status"] == "expired"
    with app.app_context():
        assert db.session.scalar(sa.select(ReceivedPix.outcome)) == "returned_after_expiry"


def test_the_location_serves_the_amount_for_the_intended_day(client, charge):
    code = brcode.parse(charge["pix"]["br_code"])
    assert code.is_dynamic and code.amount_cents is None  # the day decides the amount
    path = urlsplit(f"https://{code.location}").path
    with _at(1):
        today = client.get(path).get_json()
        late = client.get(f"{path}?DPP=2026-12-14").get_json()
        past = client.get(f"{path}?DPP=2026-11-30")
        beyond = client.get(f"{path}?DPP=2026-12-16")
    assert today["calendario"]["dataDeVencimento"] == "2026-12-10"
    assert today["calendario"]["validadeAposVencimento"] == 5
    assert today["devedor"] == {"cpf": CPF, "nome": "Ana Souza"}
    assert today["valor"] == {
        "original": "1000.00",
        "abatimento": "20.00",
        "desconto": "9.00",
        "final": "971.00",
    }
    # 4 days late: fine 20,00, interest 1 % x 4/30 of 1 000,00 = 1,33
    assert late["valor"] == {
        "original": "1000.00",
        "multa": "20.00",
        "juros": "1.33",
        "abatimento": "20.00",
        "final": "1001.33",
    }
    assert_error(past, 400, "invalid_request_error", "invalid_request", param="DPP")
    assert_error(beyond, 400, "invalid_request_error", "invalid_request", param="DPP")


def test_the_shortcut_route_takes_a_due_date_too(client, api_key):
    with time_machine.travel(CREATED, tick=False):
        response = create(
            client,
            api_key,
            path="/v1/pix/charges",
            amount=5_000,
            customer=PAYER,
            due={"date": "2026-12-05"},
        )
    assert response.status_code == 201, response.get_json()
    due = response.get_json()["due"]
    assert (due["last_payable_date"], due["amount_due"]["total"]) == ("2026-12-07", 5_000)


@pytest.mark.parametrize(
    ("changes", "param"),
    [
        ({"customer": {"name": "Ana Souza"}}, "customer.document"),
        ({"customer": {"document": CPF}}, "customer.name"),
        ({"expires_in": 3600}, "expires_in"),
        ({"due": {**DUE, "date": "2026-11-30"}}, "due.date"),
        ({"due": {**DUE, "date": "2030-01-01"}}, "due.date"),  # over 3 years ahead
        ({"due": {**DUE, "fine": {"type": "fixed", "value": 10**15}}}, "due.fine.value"),
        ({"due": {**DUE, "fine": {"type": "fixed", "value": 1e308}}}, "due.fine.value"),
        (
            {"due": {**DUE, "interest": {"type": "fixed_day", "value": 3 * 10**11}}},
            "due.interest.value",
        ),
        ({"due": {**DUE, "fine": {"type": "percent", "value": 100}}}, "due.fine.value"),
        ({"due": {**DUE, "rebate": {"type": "fixed", "value": 100_000}}}, "due.rebate.value"),
        (
            {"due": {**DUE, "discounts": [{"until": "2026-12-11", "type": "fixed", "value": 1}]}},
            "due.discounts.0.until",
        ),
        (
            {"due": {**DUE, "interest": {"type": "percent_day", "value": 0.001}}},
            "due.interest.value",
        ),
    ],
)
def test_each_rule_of_the_terms_is_a_400_naming_its_field(client, api_key, changes, param):
    body = {"amount": 100_000, "customer": PAYER, "due": DUE, **changes}
    with time_machine.travel(CREATED, tick=False):
        response = create(client, api_key, **body)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


@pytest.mark.parametrize(
    "due",
    [
        {"days_valid_after": 1},
        {**DUE, "days_valid_after": 91},
        {**DUE, "fine": {"type": "daily", "value": 1}},
        {**DUE, "fine": {"type": "fixed", "value": "200"}},
        {**DUE, "fine": {"type": "fixed", "value": True}},
        {**DUE, "discounts": "often"},
        {**DUE, "discounts": []},
        {**DUE, "date": "10/12/2026"},
        {**DUE, "date": "20261210"},  # Python reads it; the published pattern does not
    ],
)
def test_a_malformed_due_object_is_a_400_with_details(client, api_key, due):
    with time_machine.travel(CREATED, tick=False):
        response = create(client, api_key, amount=100_000, customer=PAYER, due=due)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"]["code"] == "invalid_request"


def _settled(app, charge_id: str) -> int:
    """The provider-clearing line of the charge's settlement posting: minus what was paid."""
    with app.app_context():
        posting = db.session.scalar(
            sa.select(LedgerPosting).where(LedgerPosting.reference_id == raw(charge_id))
        )
        return min(
            db.session.scalars(
                sa.select(LedgerEntry.amount).where(LedgerEntry.posting_id == posting.id)
            )
        )
