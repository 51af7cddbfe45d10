"""Every dashboard form is protected against cross-site posts. The test walks `app.url_map`,
so a POST route added later without the CSRF check fails it. The user is platform staff and
the account's OWNER, and each path names a real object of that account, so every refused
post is one that would otherwise have acted; the evidence upload endpoints, which take the
token in the X-CSRFToken header (static/evidence-upload.js), are posted as the script does."""

import html

from app.models import Role
from tests.support.dashboard import sign_in
from tests.support.dashboard_routes import (
    changed_tables,
    dashboard_routes,
    database_rows,
    page_token,
    post,
)

REFUSAL = "This form has expired or did not come from this site."


def _text(response) -> str:
    return " ".join(html.unescape(response.get_data(as_text=True)).split())


def test_every_post_route_refuses_a_post_without_the_sessions_csrf_token(app, client, shop):
    sign_in(client, shop.operator())
    another_sessions_token = page_token(app.test_client())
    routes = dashboard_routes(app, "POST")
    assert {"dashboard.logout", "dashboard.create_evidence_upload"} <= {
        route.endpoint for route in routes
    }
    for route in routes:
        action = shop.action(route)
        for token in (None, another_sessions_token):
            before = database_rows(app)
            response = post(client, shop, route, action, token)
            changed = changed_tables(before, database_rows(app))
            missing = "without a token" if token is None else "with another session's token"
            assert response.status_code == 400, f"{route.endpoint} {missing}"
            assert REFUSAL in _text(response), route.endpoint
            assert changed == [], f"{route.endpoint} {missing} changed {changed}"
            assert client.get("/dashboard/").status_code == 200  # still signed in


def test_signing_in_needs_the_login_pages_token(app, client, shop):
    member = shop.member(Role.MEMBER)
    response = client.post(
        "/dashboard/login", data={"email": member.email, "password": member.password}
    )
    assert response.status_code == 400
    assert REFUSAL in _text(response)
    assert client.get("/dashboard/").headers["Location"].startswith("/dashboard/login")


def test_the_upload_script_sends_the_token_in_its_header(app, client, shop):
    sign_in(client, shop.member(Role.OWNER))
    (ticket_route,) = (
        r for r in dashboard_routes(app, "POST") if r.endpoint == "dashboard.create_evidence_upload"
    )
    action = shop.action(ticket_route)
    url = shop.url(ticket_route, action)
    assert client.post(url, json=action.json).status_code == 400
    with_form_field = client.post(url, json={**action.json, "csrf_token": page_token(client)})
    assert with_form_field.status_code == 400
    sent = client.post(url, json=action.json, headers={"X-CSRFToken": page_token(client)})
    assert sent.status_code == 201, sent.get_json()
