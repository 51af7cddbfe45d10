"""A webhook endpoint added on the webhooks page in a real browser receives the charge events:
the worker delivers `charge.created` to a real local receiver, signed with the secret the page
showed once, and the page's delivery log lists the delivery as DELIVERED. The endpoint's
address stays readable in its table, and the delivery's resend button clear of the cards."""

import hashlib
import hmac
import json
import re

from app.models import Role
from tests.browser.conftest import expect, run_jobs, sign_in
from tests.support import charges, factories


def _signed_with(secret: str, received) -> bool:
    """The canonical family's `t=<unix time>,v1=<hex>` over "<t>." + the raw body."""
    parts = dict(part.split("=", 1) for part in received.headers["X-Acme-Signature"].split(","))
    signed = parts["t"].encode() + b"." + received.body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(parts["v1"], expected)


def test_an_endpoint_added_on_the_page_receives_a_charge_event(app, client, redis, page, receiver):
    owner = factories.make_member(app, role=Role.OWNER)
    api_key = factories.make_api_key(app, owner.account_id)
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhooks").click()
    expect(page.get_by_text("No test endpoints yet.")).to_be_visible()

    form = page.get_by_role("region", name="Add endpoint")
    form.get_by_label("Endpoint URL").fill(receiver.url)
    form.get_by_label("charge.created", exact=True).check()
    form.get_by_label("charge.paid", exact=True).check()
    form.get_by_role("button", name="Add test endpoint").click()
    shown = page.get_by_role("alert")
    expect(shown.get_by_role("heading")).to_have_text("Signing secret of your new endpoint")
    expect(shown).to_contain_text(receiver.url)
    secret = shown.get_by_label("Signing secret").input_value()
    endpoint = (
        page.get_by_role("region", name="Test endpoints")
        .get_by_role("row")
        .filter(has_text=receiver.url)
    )
    expect(endpoint).to_contain_text("charge.created, charge.paid")
    expect(endpoint).to_contain_text("Active")
    address = endpoint.get_by_role("cell").first.locator(".mono")
    expect(address).to_have_text(receiver.url)
    lines = "span => new Set([...span.getClientRects()].map(box => Math.round(box.top))).size"
    assert address.evaluate(lines) == 1  # on one line, not broken every few characters

    charge = charges.created(client, api_key, amount=2500)
    run_jobs(app, redis)

    (received,) = receiver.received
    assert received.headers["X-Acme-Event-Type"] == "charge.created"
    assert json.loads(received.body)["data"]["object"]["id"] == charge["id"]
    assert _signed_with(secret, received)

    page.get_by_role("link", name="Delivery log").click()
    log = page.get_by_role("region", name="Test deliveries")
    delivery = log.get_by_role("row").filter(has_text="charge.created")
    expect(log.get_by_role("row")).to_have_count(2)  # the header and this delivery
    expect(delivery).to_contain_text("Delivered")
    expect(delivery).to_contain_text(receiver.url)
    expect(delivery.get_by_role("cell").nth(4)).to_have_text(re.compile(r"^1/\d+$"))  # attempts
    expect(delivery.get_by_role("cell").nth(5)).to_have_text("200")  # last status code

    delivery.get_by_role("link", name="View").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        re.compile(r"charge\.created\s+Delivered\s+test mode")
    )
    sent = page.get_by_role("region", name="Request")
    expect(sent).to_contain_text(received.headers["X-Acme-Delivery-Id"])
    expect(sent.locator("pre")).to_contain_text(f'"id": "{charge["id"]}"')
    resend = page.get_by_role("button", name="Resend").bounding_box()
    card = page.get_by_role("region", name="Delivery", exact=True).bounding_box()
    assert card["y"] - (resend["y"] + resend["height"]) >= 12  # a gap, not touching
