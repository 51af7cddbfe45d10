"""Who may act where in the dashboard: `WHO_MAY_ACT` maps every route's endpoint to the
audience the views and services allow, and the tests check it through real HTTP.

They walk `app.url_map`, so a route added without a line in the table fails ("new route
without a role expectation"). Each user is refused every route above their audience with a
valid CSRF token and a request that would act, and the database is shown unchanged; the
least-privileged audience the table allows is shown to act with that same request; and a
visitor who is not signed in is sent to the login page from every page.
"""

import enum
from urllib.parse import urlsplit

import pytest

from app.models import Role
from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.dashboard_routes import (
    Action,
    Route,
    Shop,
    changed_tables,
    dashboard_routes,
    database_rows,
    page_token,
    post,
)

LOGIN = "/dashboard/login"
FLASHED_ERROR = '<div class="flash flash-error" role="alert">'


class Audience(enum.Enum):
    ANYONE = "anyone, signed in or not"
    SIGNED_IN = "any signed-in user"
    MEMBER = "any member of the account, MEMBER included"
    MANAGER = "the account's OWNER or ADMIN"
    STAFF = "platform staff"


WHO_MAY_ACT = {
    # Signing in and out, choosing the account and the language
    "dashboard.login": Audience.ANYONE,
    "dashboard.logout": Audience.SIGNED_IN,
    "dashboard.choose_account": Audience.SIGNED_IN,
    "dashboard.choose_language": Audience.SIGNED_IN,
    # Reading: every page of the account
    "dashboard.overview": Audience.MEMBER,
    "dashboard.api_keys_page": Audience.MEMBER,
    "dashboard.payments_page": Audience.MEMBER,
    "dashboard.payment_page": Audience.MEMBER,
    "dashboard.payments_csv": Audience.MEMBER,
    "dashboard.payment_stats_page": Audience.MEMBER,
    "dashboard.payment_receipt": Audience.MEMBER,
    "dashboard.charges_page": Audience.MEMBER,
    "dashboard.charge_page": Audience.MEMBER,
    "dashboard.disputes_page": Audience.MEMBER,
    "dashboard.dispute_page": Audience.MEMBER,
    "dashboard.disputes_csv": Audience.MEMBER,
    "dashboard.wallets_page": Audience.MEMBER,
    "dashboard.wallet_statement_csv": Audience.MEMBER,
    "dashboard.payouts_page": Audience.MEMBER,
    "dashboard.payouts_csv": Audience.MEMBER,
    "dashboard.payout_fee_preview": Audience.MEMBER,
    "dashboard.webhooks_page": Audience.MEMBER,
    "dashboard.webhook_deliveries_page": Audience.MEMBER,
    "dashboard.webhook_deliveries_csv": Audience.MEMBER,
    "dashboard.webhook_delivery_page": Audience.MEMBER,
    # The sandbox moves no money, so any member may make test charges and payments
    "dashboard.create_test_charge": Audience.MEMBER,
    "dashboard.create_test_payment": Audience.MEMBER,
    # Keys, money and the account's answers: OWNER and ADMIN
    "dashboard.issue_api_key": Audience.MANAGER,
    "dashboard.rotate_api_key": Audience.MANAGER,
    "dashboard.revoke_api_key": Audience.MANAGER,
    "dashboard.cancel_payment": Audience.MANAGER,
    "dashboard.refund_payment": Audience.MANAGER,
    "dashboard.cancel_refund": Audience.MANAGER,
    "dashboard.appeal_dispute": Audience.MANAGER,
    "dashboard.accept_dispute": Audience.MANAGER,
    "dashboard.create_evidence_upload": Audience.MANAGER,
    "dashboard.complete_evidence_upload": Audience.MANAGER,
    "dashboard.request_pix_payout": Audience.MANAGER,
    "dashboard.cancel_payout": Audience.MANAGER,
    "dashboard.add_webhook_endpoint": Audience.MANAGER,
    "dashboard.update_webhook_endpoint": Audience.MANAGER,
    "dashboard.switch_webhook_endpoint": Audience.MANAGER,
    "dashboard.rotate_webhook_secret": Audience.MANAGER,
    "dashboard.delete_webhook_endpoint": Audience.MANAGER,
    "dashboard.recover_webhook_deliveries": Audience.MANAGER,
    "dashboard.resend_webhook_delivery": Audience.MANAGER,
    # Back-office and dispute desk
    "dashboard.back_office": Audience.STAFF,
    "dashboard.release_held_charge": Audience.STAFF,
    "dashboard.return_held_charge": Audience.STAFF,
    "dashboard.approve_payout": Audience.STAFF,
    "dashboard.reject_payout": Audience.STAFF,
    "dashboard.dispute_operations": Audience.STAFF,
    "dashboard.open_dispute_case": Audience.STAFF,
    "dashboard.request_dispute_evidence": Audience.STAFF,
    "dashboard.decide_dispute": Audience.STAFF,
    "dashboard.confirm_dispute_amount": Audience.STAFF,
    "dashboard.psp_notices_page": Audience.STAFF,
    "dashboard.resolve_psp_notice": Audience.STAFF,
}
# Whose posts change the account's data (signing in, out and switching change the session).
ACTING_AUDIENCES = (Audience.MEMBER, Audience.MANAGER, Audience.STAFF)


def _action(shop: Shop, method: str, route: Route) -> Action:
    """The request for `route`, its objects made now (so a snapshot taken next excludes them)."""
    return shop.action(route) if method == "POST" else shop.page(route)


def _send(client, shop: Shop, method: str, route: Route, action: Action, token: str):
    if method == "POST":
        return post(client, shop, route, action, token)
    return client.get(shop.url(route, action))


def _refused(client, response) -> bool:
    """A 403 page (or JSON envelope), or a redirect to a page that flashes the refusal."""
    if response.status_code == 303:
        page = client.get(response.headers["Location"]).get_data(as_text=True)
        return FLASHED_ERROR in page
    return response.status_code == 403


def test_every_dashboard_route_has_a_role_expectation(app):
    endpoints = {route.endpoint for route in dashboard_routes(app)}
    missing = sorted(endpoints - WHO_MAY_ACT.keys())
    assert not missing, f"new route without a role expectation: {missing}"
    assert sorted(WHO_MAY_ACT.keys() - endpoints) == []  # no line for a route that is gone


@pytest.mark.parametrize(
    ("role", "kept_from"),
    [
        (Role.MEMBER, {Audience.MANAGER, Audience.STAFF}),
        (Role.ADMIN, {Audience.STAFF}),
        (Role.OWNER, {Audience.STAFF}),
    ],
)
def test_a_user_is_refused_every_route_above_their_role(app, client, shop, role, kept_from):
    sign_in(client, shop.member(role))
    token = page_token(client)
    walked = [
        (method, route)
        for method in ("GET", "POST")
        for route in dashboard_routes(app, method)
        if WHO_MAY_ACT.get(route.endpoint) in kept_from
    ]
    assert walked
    for method, route in walked:
        action = _action(shop, method, route)
        before = database_rows(app)
        response = _send(client, shop, method, route, action, token)
        changed = changed_tables(before, database_rows(app))
        assert _refused(client, response), (role, method, route.endpoint, response.status_code)
        assert changed == [], f"{role} {method} {route.endpoint} changed {changed}"


@pytest.mark.parametrize("endpoint", sorted(WHO_MAY_ACT))
def test_the_least_privileged_audience_allowed_gets_through(app, client, shop, endpoint):
    """The same requests the refusals use do act for whom the table allows, so a refusal
    above is the role check, not a request that would have failed anyway."""
    audience = WHO_MAY_ACT[endpoint]
    if audience is Audience.STAFF:
        sign_in(client, factories.make_staff(app))
    elif audience is not Audience.ANYONE:
        sign_in(client, shop.member(Role.ADMIN if audience is Audience.MANAGER else Role.MEMBER))
    token = page_token(client)
    walked = [
        (method, route)
        for method in ("GET", "POST")
        for route in dashboard_routes(app, method)
        if route.endpoint == endpoint
    ]
    assert walked, f"{endpoint} is in the table but not in the url map"
    for method, route in walked:
        action = _action(shop, method, route)
        before = database_rows(app)
        response = _send(client, shop, method, route, action, token)
        changed = changed_tables(before, database_rows(app))
        assert response.status_code < 400, (method, response.get_data(as_text=True))
        if method == "POST" and audience in ACTING_AUDIENCES:
            assert changed, f"{method} {endpoint} changed nothing"


def test_a_visitor_who_is_not_signed_in_is_sent_to_login_from_every_page(app, client, shop):
    pages = [route for route in dashboard_routes(app, "GET") if route.rule != LOGIN]
    assert pages
    for route in pages:
        response = client.get(shop.url(route, shop.page(route)))
        assert response.status_code == 302, route.endpoint
        assert urlsplit(response.headers["Location"]).path == LOGIN, route.endpoint
