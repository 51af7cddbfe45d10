"""Who is using the dashboard and in which account: Flask-Login user plus the chosen account.

The account is kept in the session and re-checked against an active membership on every
request, so removing someone from an account ends their access at the next click.
"""

import uuid
from functools import wraps

from flask import current_app, g, redirect, session, url_for
from flask_login import current_user, login_required, login_user, logout_user

from app.errors import PermissionDenied
from app.extensions import db, login_manager
from app.models import Membership, User
from app.models.base import utcnow
from app.services import accounts, auth

ACCOUNT_SESSION_KEY = "account_id"
SESSION_ID_KEY = "sid"


def start_session(user: User) -> None:
    """A fresh session (no fixation), with an id that logout can revoke server-side."""
    session.clear()
    session.permanent = True  # expires after PERMANENT_SESSION_LIFETIME (DASHBOARD_SESSION_HOURS)
    session[SESSION_ID_KEY] = uuid.uuid4().hex
    login_user(user)


def end_session() -> None:
    """Sign out: the session id is revoked, so a copied cookie stops working too."""
    session_id = session.get(SESSION_ID_KEY)
    if session_id:
        expires_at = utcnow() + current_app.permanent_session_lifetime
        auth.revoke(session_id, expires_at)
        db.session.commit()
    logout_user()
    session.clear()


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    session_id = session.get(SESSION_ID_KEY)
    if not session_id or auth.is_revoked(session_id):
        return None
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


def staff_required(view):
    """Platform staff only (back-office); anyone else gets 403."""

    @login_required
    @wraps(view)
    def wrapper(*args, **kwargs):
        if not current_user.is_staff:
            raise PermissionDenied("This page is for platform staff.")
        return view(*args, **kwargs)

    return wrapper
