"""Test data made through the services, returned as plain values (no ORM objects leak out)."""

from dataclasses import dataclass

from app.extensions import db
from app.models import Account, KeyMode, Role
from app.services import accounts, api_keys

PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Member:
    user_id: str
    account_id: str
    email: str
    role: Role
    password: str = PASSWORD


def make_account(app, name: str = "Loja Teste", country: str = "BR") -> str:
    with app.app_context():
        account = accounts.create_account(name, country)
        db.session.commit()
        return account.id


def make_member(
    app, account_id: str | None = None, role: Role = Role.OWNER, email: str | None = None
) -> Member:
    account_id = account_id or make_account(app)
    with app.app_context():
        email = email or f"{role.lower()}-{account_id[:8]}@merchant.example.com"
        user = accounts.find_user_by_email(email) or accounts.add_user(email, PASSWORD)
        account = db.session.get(Account, account_id)
        accounts.add_membership(account, user, role)
        db.session.commit()
        return Member(user_id=user.id, account_id=account_id, email=email, role=role)


def make_api_key(app, account_id: str, mode: KeyMode = KeyMode.TEST) -> str:
    with app.app_context():
        issued = api_keys.issue_for_account(account_id, label="test", mode=mode)
        db.session.commit()
        return issued.cleartext


def make_staff(app, email: str = "ops@acmepay.example.com") -> Member:
    """A platform staff user with no merchant account (back-office, admin API)."""
    with app.app_context():
        user = accounts.add_user(email, PASSWORD, is_staff=True)
        db.session.commit()
        return Member(user_id=user.id, account_id="", email=email, role=Role.MEMBER)
