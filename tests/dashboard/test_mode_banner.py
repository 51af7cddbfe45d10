"""The mode banner under the top bar (red in live mode) and the navigation's mode stay on a page
shown again by a form that failed, as on the page the form was sent from (issue 21). The Pix
payout form carries its mode in a field rather than in the address, and the test forms are
test mode without saying so: both used to come back with no banner and test-mode links."""

import html
import re

import pytest

from app.models import KeyMode, Role
from tests.support import disputes as d
from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.http import csrf_token
from tests.support.refunds import merchant

LIVE_BANNER = '<p class="mode-banner mode-banner-live" data-mode="live"><strong>Live mode</strong>'
TEST_BANNER = '<p class="mode-banner" data-mode="test"><strong>Test mode</strong>'


def _hidden(page: str, name: str) -> str:
    return re.search(rf'name="{name}" type="hidden" value="([^"]*)"', page).group(1)


def _shown_again(response, status: int) -> str:
    assert response.status_code == status
    return html.unescape(response.get_data(as_text=True))


def test_a_refused_live_payout_form_keeps_the_live_banner_and_links(client, owner):
    sign_in(client, owner)
    page = client.get("/dashboard/payouts?mode=live").get_data(as_text=True)
    assert LIVE_BANNER in page
    form = {
        "csrf_token": csrf_token(page),
        "idempotency_key": _hidden(page, "idempotency_key"),
        "mode": _hidden(page, "mode"),
        "amount": "0",
        "pix_key": "ana@example.com",
        "pix_key_type": "EMAIL",
    }

    text = _shown_again(client.post("/dashboard/payouts", data=form), 400)

    assert "Enter an amount greater than zero." in text
    assert LIVE_BANNER in text and "Test mode</strong>" not in text
    assert '<a href="/dashboard/payments?mode=live">Payments</a>' in text


@pytest.mark.parametrize(
    ("action", "fields", "problem"),
    [
        ("/dashboard/charges", {"amount": "0"}, "The charge was not created."),
        ("/dashboard/payments", {"amount": "0"}, "The payment was not created."),
    ],
)
def test_a_refused_test_form_keeps_the_test_banner(client, owner, action, fields, problem):
    sign_in(client, owner)
    page = client.get("/dashboard/payments").get_data(as_text=True)
    form = {"csrf_token": csrf_token(page), "idempotency_key": "k" * 32, **fields}

    text = _shown_again(client.post(action, data=form), 400)

    assert problem in text
    assert TEST_BANNER in text


def test_a_refused_live_appeal_keeps_the_live_banner(app, client, monkeypatch):
    shop = merchant(app, monkeypatch)
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    d.update_case(app, case["id"], mode=KeyMode.LIVE)
    sign_in(client, factories.make_member(app, shop.account_id, Role.OWNER))
    detail = f"/dashboard/disputes/{case['id']}?mode=live"
    token = csrf_token(client.get(detail).get_data(as_text=True))

    response = client.post(
        f"/dashboard/disputes/{case['id']}/appeal?mode=live",
        data={"csrf_token": token, "reason": "no"},
    )

    text = _shown_again(response, 400)
    assert "The appeal was not sent." in text
    assert LIVE_BANNER in text
