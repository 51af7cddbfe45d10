"""Dashboard sign-in, sign-out, account choice, and the protections around them."""

from app.models import Role
from tests.support import factories
from tests.support.dashboard import post_form, sign_in


def test_login_page_renders_an_accessible_form(client):
    page = client.get("/dashboard/login")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert '<label for="email">' in html and '<label for="password">' in html
    assert 'name="csrf_token"' in html


def test_sign_in_lands_on_the_overview_of_the_account(client, owner):
    response = sign_in(client, owner)
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/dashboard/")
    overview = client.get("/dashboard/")
    assert overview.status_code == 200
    html = overview.get_data(as_text=True)
    assert "Loja Teste" in html and '<span class="role">Owner</span>' in html


def test_wrong_password_gets_a_generic_message(client, owner):
    from tests.support.http import csrf_token

    token = csrf_token(client.get("/dashboard/login").get_data(as_text=True))
    response = client.post(
        "/dashboard/login",
        data={"email": owner.email, "password": "wrong-password", "csrf_token": token},
    )
    assert response.status_code == 401
    assert "Invalid e-mail or password." in response.get_data(as_text=True)
    assert client.get("/dashboard/").status_code == 302


def test_login_without_csrf_token_is_refused(client, owner):
    response = client.post(
        "/dashboard/login", data={"email": owner.email, "password": owner.password}
    )
    assert response.status_code == 400
    assert "This form has expired" in response.get_data(as_text=True)
    assert client.get("/dashboard/").status_code == 302


def test_pages_need_a_signed_in_user(client):
    for path in ("/dashboard/", "/dashboard/api-keys", "/dashboard/accounts"):
        response = client.get(path)
        assert response.status_code == 302
        assert "/dashboard/login" in response.headers["Location"]
    assert client.get("/").headers["Location"].endswith("/dashboard/")


def test_sign_out_ends_the_session(client, owner):
    sign_in(client, owner)
    response = post_form(client, "/dashboard/", "/dashboard/logout")
    assert response.status_code == 302
    assert client.get("/dashboard/").status_code == 302


def test_sign_out_needs_post_with_csrf(client, owner):
    sign_in(client, owner)
    assert client.get("/dashboard/logout").status_code == 405
    assert client.post("/dashboard/logout").status_code == 400
    assert client.get("/dashboard/").status_code == 200


def test_user_in_several_accounts_chooses_and_switches(app, client, owner):
    second = factories.make_account(app, "Segunda Loja")
    factories.make_member(app, second, Role.MEMBER, email=owner.email)
    response = sign_in(client, owner)
    assert response.headers["Location"].endswith("/dashboard/accounts")
    choose = client.get("/dashboard/accounts").get_data(as_text=True)
    assert "Loja Teste" in choose and "Segunda Loja" in choose
    post_form(client, "/dashboard/accounts", "/dashboard/accounts", {"account_id": second})
    assert "Segunda Loja" in client.get("/dashboard/").get_data(as_text=True)
    stranger = factories.make_account(app, "Alheia")
    post_form(client, "/dashboard/accounts", "/dashboard/accounts", {"account_id": stranger})
    assert "Alheia" not in client.get("/dashboard/").get_data(as_text=True)


def test_security_headers_and_cookie_flags(client, owner):
    response = sign_in(client, owner)
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    page = client.get("/dashboard/")
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert "<script>" not in page.get_data(as_text=True)


def test_session_cookie_is_secure_outside_development(monkeypatch):
    from app.config import load_settings

    monkeypatch.setenv("APP_ENV", "production")
    assert load_settings()["SESSION_COOKIE_SECURE"] is True
    monkeypatch.setenv("APP_ENV", "development")
    assert load_settings()["SESSION_COOKIE_SECURE"] is False


def test_removed_member_is_sent_to_choose_an_account(app, client, owner):
    sign_in(client, owner)
    with app.app_context():
        from app.extensions import db
        from app.models import Membership

        db.session.query(Membership).filter_by(user_id=owner.user_id).one().active = False
        db.session.commit()
    response = client.get("/dashboard/api-keys")
    assert response.headers["Location"].endswith("/dashboard/accounts")


def test_a_copied_session_cookie_stops_working_at_sign_out(app, client, owner):
    """Logout ends the session on the server, not only in this browser."""
    sign_in(client, owner)
    stolen = client.get_cookie("session").value
    post_form(client, "/dashboard/", "/dashboard/logout")
    thief = app.test_client()
    thief.set_cookie("session", stolen)
    response = thief.get("/dashboard/")
    assert response.status_code == 302
    assert "/dashboard/login" in response.headers["Location"]


def test_pages_and_api_answers_are_not_cached(client, owner, owner_headers):
    sign_in(client, owner)
    for response in (
        client.get("/dashboard/api-keys"),
        client.get("/v1/api-keys", headers=owner_headers),
    ):
        assert response.headers["Cache-Control"] == "no-store"
    assert "no-store" not in client.get("/static/app.css").headers.get("Cache-Control", "")
