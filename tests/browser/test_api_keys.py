"""An OWNER issues an API key in a real browser: the key is shown once, the Copy button puts
it on the clipboard, it authenticates `GET /v1/charges`, and once revoked on the page it gets
401."""

import re

from app.models import Role
from tests.browser.conftest import click_confirming, expect, sign_in
from tests.support import factories

LABEL = "checkout server"


def _charges(client, api_key: str):
    return client.get("/v1/charges", headers={"apikey": api_key})


def test_an_owner_issues_copies_uses_and_revokes_a_key(app, client, open_page):
    owner = factories.make_member(app, role=Role.OWNER)
    page = open_page("owner", permissions=["clipboard-read", "clipboard-write"])
    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API keys").click()
    expect(page.get_by_text("No active keys.")).to_be_visible()

    page.get_by_label("Label", exact=True).fill(LABEL)
    expect(page.get_by_label("Test mode (sandbox) key")).to_be_checked()
    page.get_by_role("button", name="Issue key").click()
    shown = page.get_by_role("alert")
    expect(shown.get_by_role("heading")).to_have_text("Your new test key")
    expect(shown).to_contain_text("it is shown only this once")
    cleartext = page.get_by_label("New API key").input_value()
    assert re.fullmatch(r"ak_test_[\w-]{16,}", cleartext), cleartext

    shown.get_by_role("button", name="Copy").click()
    expect(shown.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == cleartext

    row = page.get_by_role("row").filter(has_text=LABEL)
    expect(row).to_contain_text(cleartext[:12])
    expect(row).to_contain_text("never")  # not used yet
    response = _charges(client, cleartext)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"] == []

    # Shown once: the page opened again lists the key but never its secret.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API keys").click()
    expect(page.get_by_label("New API key")).to_have_count(0)
    expect(row).not_to_contain_text("never")  # the call above is its last use
    assert cleartext not in page.content()

    question = click_confirming(page, row.get_by_role("button", name="Revoke"))
    assert question.startswith("Revoke ak_test_")
    expect(page.get_by_role("status")).to_have_text(
        re.compile(r"Key ak_test_[\w-]+… revoked\. Requests using it now get 401\.")
    )
    expect(page.get_by_text("No active keys.")).to_be_visible()
    assert _charges(client, cleartext).status_code == 401
