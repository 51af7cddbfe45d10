"""The page a member lands on after signing in."""

from flask import render_template

from app.dashboard import bp
from app.dashboard.session import current_membership, member_required
from app.services import api_keys


@bp.get("/")
@member_required
def overview():
    membership = current_membership()
    keys = api_keys.list_keys(membership.account_id)
    return render_template(
        "dashboard/overview.html",
        membership=membership,
        live_keys=sum(1 for k in keys if k.mode == "live"),
        test_keys=sum(1 for k in keys if k.mode == "test"),
    )
