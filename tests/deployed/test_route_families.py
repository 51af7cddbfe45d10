"""Every route family of the deployed stack once, over HTTP only, as merchants' servers,
payers' banks and browsers reach it (issue 19): work handed to the worker, webhook and cron
processes is awaited within bounded waits. Dispute evidence (signed upload and view) is in
test_evidence_upload.py."""

import hashlib
import hmac
import json
import re
import time

import pytest

from app.pix import brcode
from tests.deployed.conftest import PUBLIC_BASE_URL, REQUEST_SECONDS
from tests.support.deployed import (
    RELEASE_SECONDS,
    created,
    new_charge,
    pay,
    released,
)
from tests.support.http import csrf_token
from tests.support.payments import payment_body
from tests.support.receiver import receiving

pytestmark = pytest.mark.slow

# PIX's default fees are 0.20 % (provider) and 0.79 % (platform).
PIX_AMOUNT, PIX_NET = 10_000, 9_901
FINALISE_SECONDS = 10
DELIVERY_SECONDS = 15
SIGNATURE_TOLERANCE_SECONDS = 300
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_a_pix_charge_is_located_paid_and_released_to_the_wallet(deployed):
    before = deployed.wait_for(lambda: released(deployed), RELEASE_SECONDS, "earlier releases")
    charge = new_charge(deployed, PIX_AMOUNT)

    fetched = deployed.api("GET", f"/v1/charges/{charge['id']}")
    assert fetched.status_code == 200, fetched.text
    assert fetched.json()["status"] == "pending"
    code = brcode.parse(charge["pix"]["br_code"])  # every length and the CRC
    assert code.location.startswith(PUBLIC_BASE_URL.removeprefix("https://") + "/v1/qr/")
    payload = deployed.request("GET", deployed.path(f"https://{code.location}"))
    assert payload.status_code == 200, payload.text
    assert payload.json()["txid"] == charge["pix"]["txid"]
    assert payload.json()["valor"] == {"original": "100.00"}
    image = deployed.request("GET", deployed.path(charge["pix"]["qr_code_url"]))
    assert image.status_code == 200, image.text
    assert image.headers["Content-Type"] == "image/png"
    assert image.content.startswith(PNG_SIGNATURE)

    pay(deployed, charge)

    after = deployed.wait_for(
        lambda: released(deployed, total_above=before["total"]),
        RELEASE_SECONDS,
        "the payment released by cron and the worker",
    )
    assert after["available"] - before["available"] == PIX_NET


def test_a_payment_is_finalised_by_the_worker(deployed):
    payment = created(deployed.api("POST", "/v1/payments", json=payment_body()))
    assert payment["status"] == "PENDING"

    def pix_code() -> str | None:
        response = deployed.api("GET", f"/v1/payments/{payment['id']}")
        assert response.status_code == 200, response.text
        return response.json().get("pixCopyPaste")

    code = deployed.wait_for(pix_code, FINALISE_SECONDS, "the worker to finalise the payment")
    assert brcode.parse(code).location


def _signed(raw_body: bytes, signature_header: str, secret: str) -> bool:
    """README, "Receiving webhooks": `t=<unix time>,v1=<HMAC-SHA256 of "t.raw body">`."""
    parts = dict(part.split("=", 1) for part in signature_header.split(","))
    if abs(time.time() - int(parts["t"])) > SIGNATURE_TOLERANCE_SECONDS:
        return False
    expected = hmac.new(secret.encode(), parts["t"].encode() + b"." + raw_body, hashlib.sha256)
    return hmac.compare_digest(parts["v1"], expected.hexdigest())


def test_a_paid_charge_is_delivered_signed_to_the_registered_endpoint(deployed):
    with receiving() as receiver:
        endpoint = created(
            deployed.api(
                "POST",
                "/v1/webhooks/endpoints",
                json={"url": receiver.url, "events": ["charge.paid"]},
            )
        )
        try:
            charge = new_charge(deployed, PIX_AMOUNT)
            pay(deployed, charge)
            delivery = deployed.wait_for(
                lambda: next(
                    (d for d in receiver.received if charge["id"].encode() in d.body), None
                ),
                DELIVERY_SECONDS,
                "the charge.paid delivery",
            )
        finally:
            deployed.api("DELETE", f"/v1/webhooks/endpoints/{endpoint['id']}")

    assert json.loads(delivery.body)["type"] == "charge.paid"
    assert _signed(delivery.body, delivery.headers["X-Acme-Signature"], endpoint["secret"])


def test_the_owner_signs_in_and_issues_a_key_on_the_dashboard(deployed):
    browser = deployed.signed_in(deployed.seed["email"], deployed.seed["password"])
    overview = browser.get(deployed.base + "/dashboard/", timeout=REQUEST_SECONDS)
    assert overview.status_code == 200 and overview.url == deployed.base + "/dashboard/"
    keys_page = browser.get(deployed.base + "/dashboard/api-keys", timeout=REQUEST_SECONDS)

    issued = browser.post(
        deployed.base + "/dashboard/api-keys",
        data={"label": "deployed suite", "test": "y", "csrf_token": csrf_token(keys_page.text)},
        timeout=REQUEST_SECONDS,
    )

    assert issued.status_code == 201, issued.text
    shown = re.search(r'id="new-api-key"[^>]* value="([^"]+)"', issued.text)
    assert shown, issued.text
    listed = deployed.request("GET", "/v1/charges", headers={"apikey": shown.group(1)})
    assert listed.status_code == 200, listed.text


def test_an_api_answer_leaves_the_dashboard_cookie_alone(deployed):
    """Through gunicorn, a caller that sends the dashboard's cookie along with its API key gets
    an answer that neither varies on nor sets that cookie, and stays signed in (issue 22)."""
    browser = deployed.signed_in(deployed.seed["email"], deployed.seed["password"])
    assert browser.cookies.get("session")

    listed = browser.get(
        deployed.base + "/v1/charges",
        headers={"apikey": deployed.seed["test_api_key"]},
        timeout=REQUEST_SECONDS,
    )

    assert listed.status_code == 200, listed.text
    assert "cookie" not in listed.headers.get("Vary", "").lower()
    assert "Set-Cookie" not in listed.headers
    overview = browser.get(deployed.base + "/dashboard/", timeout=REQUEST_SECONDS)
    assert overview.status_code == 200 and overview.url == deployed.base + "/dashboard/"


def test_the_checkout_page_shows_the_amount_in_the_payers_language(deployed):
    """Through gunicorn, the page follows the payer's Accept-Language, and with none the
    Brazilian merchant's Portuguese."""
    charge = new_charge(deployed, amount=4990)
    path = deployed.path(charge["checkout_url"])

    for asked in ("pt-BR,pt;q=0.9,en;q=0.8", ""):
        page = deployed.request("GET", path, headers={"Accept-Language": asked})
        assert page.status_code == 200, page.text
        assert page.headers["Content-Type"].startswith("text/html")
        assert '<html lang="pt-BR">' in page.text and "R$\u00a049,90" in page.text
    page = deployed.request("GET", path, headers={"Accept-Language": "en-GB,en;q=0.9"})
    assert '<html lang="en">' in page.text and "R$49.90" in page.text
