"""Dashboard sign-in, sign-out and choosing which account to act in."""

from flask import flash, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required

from app.dashboard import bp
from app.dashboard.forms.access import AccountSwitchForm, LoginForm
from app.dashboard.session import ACCOUNT_SESSION_KEY, end_session, start_session
from app.errors import RateLimited, Unauthorized
from app.extensions import db
from app.services import accounts, login_throttle


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
            flash(refusal.message, "error")
            return render_template("dashboard/login.html", form=form), 429, refusal.headers
        except Unauthorized:
            flash("Invalid e-mail or password.", "error")
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
    flash("You have been signed out.", "info")
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
        flash("You do not belong to that account.", "error")
    return render_template("dashboard/choose_account.html", memberships=memberships, form=form)
