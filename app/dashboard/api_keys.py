"""The API keys page: list, issue (cleartext shown once), rotate and revoke.

The page calls the same service functions as `/v1/api-keys`, so the role rule is enforced
in one place: a MEMBER who posts a form by hand gets 403 like on the API.
"""

from flask import flash, redirect, render_template, url_for
from flask_babel import gettext as _

from app.dashboard import bp
from app.dashboard.forms import ConfirmForm, submitted
from app.dashboard.forms.access import ApiKeyIssueForm
from app.dashboard.session import current_membership, member_required
from app.extensions import db
from app.models import KeyMode
from app.services import api_keys


def _render(issued: api_keys.IssuedKey | None = None, status: int = 200):
    membership = current_membership()
    page = render_template(
        "dashboard/api_keys.html",
        keys=api_keys.list_keys(membership.account_id),
        can_manage=membership.can_manage_api_keys,
        issue_form=ApiKeyIssueForm(formdata=None),
        confirm_form=ConfirmForm(formdata=None),
        issued=issued,
    )
    return page, status


@bp.get("/api-keys")
@member_required
def api_keys_page():
    return _render()


@bp.post("/api-keys")
@member_required
def issue_api_key():
    form = submitted(ApiKeyIssueForm())
    mode = KeyMode.TEST if form.test.data else KeyMode.LIVE
    issued = api_keys.issue(current_membership(), label=form.label.data or None, mode=mode)
    db.session.commit()
    return _render(issued, 201)


@bp.post("/api-keys/<key_id>/rotate")
@member_required
def rotate_api_key(key_id: str):
    submitted(ConfirmForm())
    issued = api_keys.rotate(current_membership(), key_id)
    db.session.commit()
    return _render(issued, 201)


@bp.post("/api-keys/<key_id>/revoke")
@member_required
def revoke_api_key(key_id: str):
    submitted(ConfirmForm())
    key = api_keys.revoke(current_membership(), key_id)
    db.session.commit()
    flash(_("Key %(key)s… revoked. Requests using it now get 401.", key=key.prefix), "info")
    return redirect(url_for("dashboard.api_keys_page"))
