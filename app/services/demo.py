"""The demo merchant a newcomer gets: an owner, a staff user, and fresh test and live keys.

Seeding is idempotent: a second run reuses the account and users (resetting their demo
passwords so the printed login works), revokes the previous demo keys and issues a fresh
pair, so the keys just printed are the demo's only keys.
"""

from dataclasses import asdict, dataclass

import sqlalchemy as sa
from flask import current_app

from app.extensions import db
from app.models import KeyMode, Membership, Role, User
from app.services import accounts, api_keys

DEMO_ACCOUNT_NAME = "Demo Store"
DEMO_OWNER_EMAIL = "owner@demo-store.example.com"
DEMO_OWNER_PASSWORD = "demo-owner-password"  # noqa: S105 (printed to the newcomer on purpose)
DEMO_STAFF_EMAIL = "staff@acmepay.example.com"
DEMO_STAFF_PASSWORD = "demo-staff-password"  # noqa: S105
DEMO_KEY_LABELS = {KeyMode.TEST: "demo seed (test)", KeyMode.LIVE: "demo seed (live)"}


@dataclass(frozen=True)
class DemoSeed:
    account_id: str
    account_name: str
    email: str
    password: str
    test_api_key: str
    live_api_key: str
    staff_email: str
    staff_password: str
    dashboard_url: str

    def as_dict(self) -> dict:
        return asdict(self)

    def summary_lines(self) -> list[str]:
        """What a newcomer needs, as printed by `flask demo seed` and the run command."""
        return [
            f"  Account:      {self.account_name} ({self.account_id})",
            f"  Dashboard:    {self.dashboard_url}",
            f"  Owner login:  {self.email} / {self.password}",
            f"  Staff login:  {self.staff_email} / {self.staff_password}",
            f"  Test API key: {self.test_api_key}",
            f"  Live API key: {self.live_api_key}",
        ]


def seed() -> DemoSeed:
    owner = _user(DEMO_OWNER_EMAIL, DEMO_OWNER_PASSWORD, name="Demo Owner", is_staff=False)
    _user(DEMO_STAFF_EMAIL, DEMO_STAFF_PASSWORD, name="Platform Staff", is_staff=True)
    membership = db.session.scalar(
        sa.select(Membership)
        .where(Membership.user_id == owner.id, Membership.role == Role.OWNER)
        .order_by(Membership.created_at)
    )
    account = membership.account if membership else accounts.create_account(DEMO_ACCOUNT_NAME)
    accounts.add_membership(account, owner, Role.OWNER)
    fresh = {}
    for mode, label in DEMO_KEY_LABELS.items():
        api_keys.revoke_labelled(account.id, label)
        fresh[mode] = api_keys.issue_for_account(account.id, label=label, mode=mode).cleartext
    return DemoSeed(
        account_id=account.id,
        account_name=account.name,
        email=DEMO_OWNER_EMAIL,
        password=DEMO_OWNER_PASSWORD,
        test_api_key=fresh[KeyMode.TEST],
        live_api_key=fresh[KeyMode.LIVE],
        staff_email=DEMO_STAFF_EMAIL,
        staff_password=DEMO_STAFF_PASSWORD,
        dashboard_url=f"{current_app.config['PUBLIC_BASE_URL']}/dashboard/",
    )


def _user(email: str, password: str, *, name: str, is_staff: bool) -> User:
    user = accounts.find_user_by_email(email)
    if user is None:
        return accounts.add_user(email, password, name=name, is_staff=is_staff)
    accounts.set_password(user, password)
    user.active = True
    user.is_staff = is_staff
    return user
