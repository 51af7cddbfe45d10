"""A test Pix charge made on the dashboard's payments page, paid on its hosted checkout page in
a real browser: the sandbox's Simulate payment button pays it and the page turns paid by
itself, without a reload (checkout.js polls the status), and the API agrees."""

import re

from app.models import Role
from tests.browser.conftest import expect, sign_in
from tests.support import charges, factories


def test_a_dashboard_test_charge_is_paid_on_its_checkout_page(app, client, page):
    owner = factories.make_member(app, factories.make_account(app, "Café Aurora"), Role.OWNER)
    api_key = factories.make_api_key(app, owner.account_id)
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Payments").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Payments test mode")

    form = page.get_by_role("region", name="New test Pix charge")
    form.get_by_text("New test Pix charge").click()  # the form is folded in a <details>
    form.get_by_label("Amount (R$)").fill("49,90")
    form.get_by_label("Description").fill("Bolo de cenoura")
    form.get_by_role("button", name="Create test charge").click()

    expect(page.get_by_role("status").first).to_have_text("Test charge created")
    expect(page.get_by_role("heading", level=1)).to_contain_text("R$49.90")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Waiting for payment")
    charge_id = re.search(r"/payments/(ch_[0-9a-f-]+)", page.url)[1]
    assert charges.get(client, api_key, charge_id).get_json()["status"] == "pending"

    page.get_by_role("link", name="Open the hosted checkout page").click()
    expect(page).to_have_url(re.compile(rf"/checkout/{charge_id.removeprefix('ch_')}$"))
    status = page.locator("[data-status-region]")
    expect(status).to_have_text("Status: Waiting for payment")
    expect(page.get_by_text("Café Aurora", exact=True)).to_be_visible()
    expect(page.get_by_text("Bolo de cenoura")).to_be_visible()
    expect(page.get_by_role("heading", name="Pay with Pix")).to_be_visible()
    expect(page.get_by_text("Test mode: this is a sandbox charge")).to_be_visible()
    page.evaluate("window.stillTheSamePage = true")  # gone if the tab ever reloads

    # The Simulate payment button posts in the background; the status poll turns the page
    # paid, and the sandbox section goes with the payment instructions.
    page.get_by_role("region", name="Sandbox").get_by_role(
        "button", name="Simulate payment"
    ).click()
    expect(status).to_have_text("Status: Paid")
    expect(page.get_by_role("heading", name="Payment received")).to_be_visible()
    expect(page.get_by_role("heading", name="Pay with Pix")).to_be_hidden()
    expect(page.get_by_role("button", name="Simulate payment")).to_have_count(0)
    assert page.evaluate("window.stillTheSamePage") is True

    body = charges.get(client, api_key, charge_id).get_json()
    assert (body["status"], body["amount"]) == ("paid", 4990)
