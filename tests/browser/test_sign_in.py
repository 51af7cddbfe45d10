"""Signing in and out of the dashboard in a real browser: a refused sign-in says the same
generic words whatever was wrong, the right password lands on the overview, and signing out
ends the session on the server (a dashboard page then asks to sign in, even with the cookie
copied before)."""

import re

from app.models import Role
from tests.browser.conftest import expect, sign_in
from tests.support import factories

LOGIN = re.compile(r"/dashboard/login(\?.*)?$")
REFUSED = "Invalid e-mail or password."


def _submit(page, email: str, password: str) -> int:
    """Send the form and wait for the page it leads to; its HTTP status."""
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Sign in").click()
    return navigation.value.status


def test_a_wrong_password_is_refused_and_the_right_one_lands_on_the_overview(app, page):
    account_id = factories.make_account(app, "Padaria Estrela")
    owner = factories.make_member(app, account_id, Role.OWNER)

    page.goto("/dashboard/login")
    assert _submit(page, owner.email, "not the password") == 401
    expect(page.get_by_role("alert")).to_have_text(REFUSED)
    expect(page).to_have_url(LOGIN)
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)

    assert _submit(page, "nobody@merchant.example.com", owner.password) == 401
    expect(page.get_by_role("alert")).to_have_text(REFUSED)  # no hint that the e-mail exists

    assert _submit(page, owner.email, owner.password) == 200  # after the redirect
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    expect(page).to_have_title("Overview · Acme Pay")
    expect(page.get_by_role("heading", level=1)).to_have_text("Padaria Estrela")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link")).to_have_text(
        ["Overview", "Payments", "Disputes", "Wallets", "Payouts", "Webhooks", "API keys"]
    )
    expect(page.get_by_text(owner.email)).to_be_visible()


def test_signing_out_ends_the_session(app, page, open_page):
    owner = factories.make_member(app)
    sign_in(page, owner)
    expect(page.get_by_role("heading", level=1)).to_have_text("Loja Teste")
    copied = open_page("copied-cookie")  # another browser holding the same session cookie
    copied.context.add_cookies(page.context.cookies())
    copied.goto("/dashboard/payments")
    expect(copied.get_by_role("heading", level=1)).to_contain_text("Payments")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("You have been signed out.")
    expect(page).to_have_url(LOGIN)

    page.goto("/dashboard/payments")
    expect(page).to_have_url(re.compile(r"/dashboard/login\?next=%2Fdashboard%2Fpayments$"))
    expect(page.get_by_role("status")).to_have_text("Please sign in to continue.")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    # The session id was revoked on the server: the cookie copied before is refused too.
    copied.reload()
    expect(copied).to_have_url(LOGIN)
    expect(copied.get_by_role("heading", name="Sign in")).to_be_visible()
