"""A web process remembers an account's charge terms with its API key (issue 22: no read of
the account per charge); an operator's change of those terms, made by another process
(`flask accounts set`), reaches the next charge."""

from datetime import timedelta

import pytest

from app.pix import brcode
from tests.support.charges import charge_body, lifetime
from tests.support.deployed import created

pytestmark = pytest.mark.slow


def _charge(deployed, api_key: str) -> dict:
    return created(
        deployed.api("POST", "/v1/charges", json=charge_body(), headers={"apikey": api_key})
    )


def test_an_operators_change_of_account_terms_reaches_the_next_charge(deployed):
    account_id, api_key = deployed.new_merchant("Terms Store")
    for _ in range(4):  # both web workers likely remember the key and its terms now
        assert abs(lifetime(_charge(deployed, api_key)) - timedelta(hours=1)) < timedelta(seconds=2)

    deployed.run(
        f"flask --app wsgi accounts set {account_id} --city Campinas --charge-expires-in 600"
    )

    for _ in range(4):  # whichever worker answers
        charge = _charge(deployed, api_key)
        assert brcode.parse(charge["pix"]["br_code"]).merchant_city == "Campinas"
        assert abs(lifetime(charge) - timedelta(seconds=600)) < timedelta(seconds=2)
