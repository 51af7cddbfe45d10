"""The back-office: platform staff see every merchant account; nobody else gets in."""

from app.models import Role
from app.services import accounts
from tests.support import factories
from tests.support.dashboard import sign_in


def _staff(app):
    from app.extensions import db

    with app.app_context():
        user = accounts.add_user("ops@acmepay.example.com", factories.PASSWORD, is_staff=True)
        db.session.commit()
        return factories.Member(user.id, "", user.email, Role.MEMBER)


def test_staff_without_an_account_lands_on_the_back_office(app, client, owner):
    factories.make_api_key(app, owner.account_id)
    response = sign_in(client, _staff(app))
    assert response.headers["Location"].endswith("/dashboard/back-office")
    page = client.get("/dashboard/back-office").get_data(as_text=True)
    assert "Loja Teste" in page and owner.account_id in page
    assert ">1</td>" in page  # one active member, one active key
    assert 'href="/dashboard/api-keys"' not in page  # merchant pages need an account


def test_merchant_users_cannot_open_the_back_office(client, owner):
    sign_in(client, owner)
    assert "Back-office" not in client.get("/dashboard/").get_data(as_text=True)
    response = client.get("/dashboard/back-office")
    assert response.status_code == 403
    assert "platform staff" in response.get_data(as_text=True)


def test_back_office_needs_a_signed_in_user(client):
    assert "/dashboard/login" in client.get("/dashboard/back-office").headers["Location"]
