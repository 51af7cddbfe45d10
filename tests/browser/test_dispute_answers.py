"""A merchant's OWNER answers disputes on the case page in a real browser: an appeal leaves the
case `appealed` with the amount still held; accepting takes the confirmation box (without it
the page explains, before asking anything), then the case is `accepted` and its money `lost`.
The API agrees."""

import re

import pytest

from app.models import Role
from tests.browser.conftest import click_confirming, expect, sign_in
from tests.support import disputes as d
from tests.support import factories
from tests.support.refunds import merchant

APPEAL = "The customer received the goods: signed delivery receipt attached."


@pytest.fixture
def shop(app, monkeypatch):
    return merchant(app, monkeypatch)


@pytest.fixture
def owner(app, shop):
    return factories.make_member(app, shop.account_id, Role.OWNER)


def _case(client, shop, case_id: str) -> dict:
    return d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case_id}").get_json()


def _open_case_page(page, owner, case_id: str) -> None:
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Disputes").click()
    page.get_by_role("region", name="Test disputes").get_by_role("link", name=case_id).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Open")


def test_an_owner_appeals_and_the_amount_stays_held(app, client, shop, owner, page):
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    _open_case_page(page, owner, case["id"])

    answer = page.get_by_role("region", name="Your answer")
    answer.get_by_label("Why you contest this dispute").fill(APPEAL)
    answer.get_by_role("button", name="Send appeal").click()

    expect(page.get_by_role("status").filter(has_text="Appeal sent")).to_have_text(
        "Appeal sent: the amount stays held until the dispute is decided."
    )
    expect(page.get_by_role("heading", level=1)).to_have_text(
        re.compile(r"R\$123\.45\s+Appealed\s+test mode")
    )
    expect(answer).to_contain_text("You appealed: the amount stays held")
    expect(answer.get_by_role("button")).to_have_count(0)
    timeline = page.get_by_role("region", name="Timeline").get_by_role("listitem")
    expect(timeline.filter(has_text="You appealed")).to_contain_text(APPEAL)
    body = _case(client, shop, case["id"])
    assert (body["status"], body["appeal_reason"], body["money_outcome"]) == (
        "appealed",
        APPEAL,
        None,
    )


def test_accepting_takes_the_confirmation_box_and_loses_the_amount(app, client, shop, owner, page):
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    _open_case_page(page, owner, case["id"])
    answer = page.get_by_role("region", name="Your answer")
    accept = answer.get_by_role("button", name="Accept the dispute")

    asked = []

    def dismiss(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    accept.click()  # no question about an incomplete form: the page says what is missing
    expect(page.get_by_role("alert")).to_contain_text("The dispute was not accepted.")
    page.remove_listener("dialog", dismiss)
    assert asked == []
    box = page.get_by_label("I understand that accepting is final")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_have_accessible_description("Tick the box to confirm that you accept the loss.")
    assert _case(client, shop, case["id"])["status"] == "open"

    box.check()
    question = click_confirming(page, accept)
    assert question == "Accept this dispute? R$123.45 is lost and this cannot be undone."
    expect(page.get_by_role("status").filter(has_text="You accepted")).to_have_text(
        "You accepted the dispute: R$123.45 is returned to the payer. This is final."
    )
    expect(page.get_by_role("heading", level=1)).to_have_text(
        re.compile(r"R\$123\.45\s+Accepted\s+test mode")
    )
    expect(answer).to_contain_text("The case is accepted: there is nothing left to answer.")
    details = page.get_by_role("region", name="Details")
    expect(details).to_contain_text("Lost: the held amount was returned to the payer")
    body = _case(client, shop, case["id"])
    assert (body["status"], body["money_outcome"]) == ("accepted", "lost")
