"""Dashboard sign-in, sign-out, choosing which account to act in, and the language to read."""

from flask import flash, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from flask_login import current_user, login_required

from app.dashboard import bp
from app.dashboard.forms.access import AccountSwitchForm, LanguageForm, LoginForm
from app.dashboard.session import ACCOUNT_SESSION_KEY, end_session, start_session
from app.errors import InvalidRequest, RateLimited, Unauthorized
from app.extensions import db
from app.services import accounts, login_throttle
from app.templating import refusal_text


@bp.route("/login", methods=["GET", "POST"])
def login():
    if current_user.is_authenticated:
        return redirect(url_for("dashboard.overview"))
    form = LoginForm()
    if form.validate_on_submit():
        try:
            with login_throttle.guard(form.email.data, request.remote_addr):
                user = accounts.authenticate(form.email.data, form.password.data)
        except RateLimited as refusal:
            flash(refusal_text(refusal), "error")
            return render_template("dashboard/login.html", form=form), 429, refusal.headers
        except Unauthorized:
            flash(_("Invalid e-mail or password."), "error")
            return render_template("dashboard/login.html", form=form), 401
        db.session.commit()
        start_session(user)
        memberships = accounts.active_memberships(user)
        if len(memberships) == 1:
            session[ACCOUNT_SESSION_KEY] = memberships[0].account_id
            return redirect(url_for("dashboard.overview"))
        if not memberships and user.is_staff:
            return redirect(url_for("dashboard.back_office"))
        return redirect(url_for("dashboard.choose_account"))
    return render_template("dashboard/login.html", form=form), 400 if form.errors else 200


@bp.post("/logout")
@login_required
def logout():
    end_session()
    flash(_("You have been signed out."), "info")
    return redirect(url_for("dashboard.login"))


@bp.route("/accounts", methods=["GET", "POST"])
@login_required
def choose_account():
    """Pick the account to work in (users who belong to several, or after losing one)."""
    memberships = accounts.active_memberships(current_user)
    form = AccountSwitchForm()
    if request.method == "POST" and form.validate_on_submit():
        if any(m.account_id == form.account_id.data for m in memberships):
            session[ACCOUNT_SESSION_KEY] = form.account_id.data
            return redirect(url_for("dashboard.overview"))
        flash(_("You do not belong to that account."), "error")
    return render_template("dashboard/choose_account.html", memberships=memberships, form=form)


@bp.post("/language")
@login_required
def choose_language():
    """Keep the language the person picked (on them, so every browser shows it), then show
    the page they picked it on again."""
    form = LanguageForm()
    if not form.validate_on_submit():
        raise InvalidRequest("Choose one of the languages offered.", param="locale")
    accounts.choose_language(current_user, form.locale.data)
    db.session.commit()
    return redirect(_same_site_path(form.next.data) or url_for("dashboard.overview"), 303)


def _same_site_path(path: str | None) -> str | None:
    """`path` when it is a path on this site (never another host's address)."""
    if path and path.startswith("/") and not path.startswith(("//", "/\\")):
        return path
    return None
