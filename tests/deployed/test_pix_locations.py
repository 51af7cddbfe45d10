"""A charge created through the deployed web process, whose PUBLIC_BASE_URL has a real,
39-character host, carries a valid BR Code whose location answers at that process."""

import uuid

import pytest

from app.pix import brcode
from tests.deployed.conftest import PUBLIC_BASE_URL
from tests.support.charges import charge_body

pytestmark = pytest.mark.slow


def test_the_code_is_valid_and_its_location_answers(deployed_web, api_key):
    response = deployed_web.request(
        "POST",
        "/v1/charges",
        json=charge_body(amount=4990),
        headers={"apikey": api_key, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 201, response.text
    charge = response.json()
    assert charge["status"] == "pending", charge

    code = brcode.parse(charge["pix"]["br_code"])  # every length and the CRC
    assert code.location.startswith(PUBLIC_BASE_URL.removeprefix("https://") + "/v1/qr/")
    payload = deployed_web.request("GET", deployed_web.path(f"https://{code.location}"))
    assert payload.status_code == 200, payload.text
    assert payload.json()["txid"] == charge["pix"]["txid"]
    assert payload.json()["valor"] == {"original": "49.90"}
