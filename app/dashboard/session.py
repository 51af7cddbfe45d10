"""Who is using the dashboard and in which account: Flask-Login user plus the chosen account.

The account is kept in the session and re-checked against an active membership on every
request, so removing someone from an account ends their access at the next click.
"""

from functools import wraps

from flask import g, redirect, session, url_for
from flask_login import current_user, login_required

from app.extensions import db, login_manager
from app.models import Membership, User
from app.services import accounts

ACCOUNT_SESSION_KEY = "account_id"


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    user = db.session.get(User, user_id)
    return user if user is not None and user.active else None


def current_membership() -> Membership | None:
    """The active membership for the account chosen in this session, if any."""
    if "dashboard_membership" not in g:
        account_id = session.get(ACCOUNT_SESSION_KEY)
        g.dashboard_membership = (
            accounts.active_membership(current_user.id, account_id)
            if current_user.is_authenticated and account_id
            else None
        )
    return g.dashboard_membership


def member_required(view):
    """Logged in and acting in an account they still belong to."""

    @login_required
    @wraps(view)
    def wrapper(*args, **kwargs):
        membership = current_membership()
        if membership is None:
            return redirect(url_for("dashboard.choose_account"))
        g.account_id = membership.account_id
        return view(*args, **kwargs)

    return wrapper
