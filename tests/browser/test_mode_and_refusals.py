"""What a merchant sees in a real browser when the dashboard refuses something, and under which
mode (issue 21): a refused live payout form comes back under the red live banner, with live
links; the live overview lists only live disputes; days in the wrong order come back beside
the date fields, the other filters kept; and an appeal on a case that held nothing never says
money is held."""

import re

from app.models import KeyMode, Role
from tests.browser.conftest import expect, sign_in
from tests.browser.pages import VIEWPORT
from tests.support import disputes as d
from tests.support import factories
from tests.support.refunds import merchant

LIVE_BANNER = "Live mode: real payments and real money."


def _owner_of_a_shop(app, monkeypatch):
    shop = merchant(app, monkeypatch)
    return shop, factories.make_member(app, shop.account_id, Role.OWNER)


def test_a_refused_live_payout_comes_back_under_the_live_banner(app, page):
    owner = factories.make_member(app, role=Role.OWNER)
    page.set_viewport_size(VIEWPORT)
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    page.get_by_role("navigation", name="Mode").get_by_role("link", name="Live mode").click()
    expect(page.get_by_text(LIVE_BANNER)).to_be_visible()

    form = page.get_by_role("region", name="Request a Pix payout")
    form.get_by_label("Amount (R$)").fill("0")
    form.get_by_label("Pix key").fill("ana@example.com")
    form.get_by_label("Key type").select_option(label="E-mail")
    form.get_by_role("button", name="Request live payout").click()

    expect(page.get_by_role("alert")).to_contain_text("The payout was not requested.")
    expect(page.get_by_text(LIVE_BANNER)).to_be_visible()
    payments = page.get_by_role("navigation", name="Main").get_by_role("link", name="Payments")
    expect(payments).to_have_attribute("href", "/dashboard/payments?mode=live")


def test_the_live_overview_lists_only_live_disputes(app, client, page, monkeypatch):
    shop, owner = _owner_of_a_shop(app, monkeypatch)
    test_case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    live_case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    d.update_case(app, live_case["id"], mode=KeyMode.LIVE)
    page.set_viewport_size(VIEWPORT)
    sign_in(page, owner)

    page.get_by_role("navigation", name="Mode").get_by_role("link", name="Live mode").click()

    expect(page.get_by_text(LIVE_BANNER)).to_be_visible()
    disputes = page.get_by_role("region", name="Open disputes")
    expect(disputes.get_by_role("link", name=live_case["id"])).to_be_visible()
    expect(disputes.get_by_role("link", name=test_case["id"])).to_have_count(0)


def test_days_in_the_wrong_order_are_shown_beside_the_date_fields(app, page):
    owner = factories.make_member(app, role=Role.OWNER)
    page.set_viewport_size(VIEWPORT)
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Payments").click()
    payments = page.get_by_role("region", name="Test payments")
    payments.get_by_label("Status").select_option("PAID")
    payments.get_by_label("Created from").fill("21/11/2026")
    payments.get_by_label("Created until").fill("20/11/2026")
    payments.get_by_role("button", name="Filter").click()

    start = payments.get_by_label("Created from")
    expect(start).to_have_attribute("aria-invalid", "true")
    expect(start).to_have_value("21/11/2026")
    expect(start).to_have_accessible_description(re.compile("After the last day"))
    problem = payments.locator("#start-date-error")
    expect(problem).to_be_visible()
    field, message = start.bounding_box(), problem.bounding_box()
    assert 0 <= message["y"] - (field["y"] + field["height"]) < 40  # right under the field
    expect(payments.get_by_label("Created until")).to_have_value("20/11/2026")
    expect(payments.get_by_label("Status")).to_have_value("PAID")
    expect(payments.get_by_role("alert")).to_have_text(
        "The days could not be used, so the list below is not filtered by day."
    )


def test_an_appeal_on_a_case_that_held_nothing_says_so(app, client, page, monkeypatch):
    shop, owner = _owner_of_a_shop(app, monkeypatch)
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"], amount=999)
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Disputes").click()
    page.get_by_role("region", name="Test disputes").get_by_role("link", name=case["id"]).click()
    held = page.locator("dt:text-is('Held from your wallet') + dd")
    expect(held).to_have_text("R$0.00")

    answer = page.get_by_role("region", name="Your answer")
    answer.get_by_label("Why you contest this dispute").fill("The goods were delivered.")
    answer.get_by_role("button", name="Send appeal").click()

    expect(page.get_by_role("status").filter(has_text="Appeal sent")).to_have_text(
        "Appeal sent: nothing was held from your wallet for this dispute, so no money waits on it."
    )
    expect(answer).to_contain_text("You appealed: nothing was held from your wallet")
    expect(page.locator("main")).not_to_contain_text("stays held")
