"""Driving the dashboard as a browser would: forms with their CSRF tokens."""

from tests.support.http import csrf_token


def sign_in(client, member, account_id: str | None = None):
    page = client.get("/dashboard/login")
    response = client.post(
        "/dashboard/login",
        data={
            "email": member.email,
            "password": member.password,
            "csrf_token": csrf_token(page.get_data(as_text=True)),
        },
    )
    if account_id:
        choose = client.get("/dashboard/accounts").get_data(as_text=True)
        response = client.post(
            "/dashboard/accounts", data={"account_id": account_id, "csrf_token": csrf_token(choose)}
        )
    return response


def post_form(client, page_path: str, action: str, data: dict | None = None):
    """Submit a form found on `page_path`, with that page's CSRF token."""
    token = csrf_token(client.get(page_path).get_data(as_text=True))
    return client.post(action, data={**(data or {}), "csrf_token": token})
