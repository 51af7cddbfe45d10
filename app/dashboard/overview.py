"""The page a member lands on after signing in, with a warning when webhook deliveries to one
of the account's endpoints keep failing, and the disputes still waiting for a decision, the
most urgent response deadline first (in either mode)."""

from flask import render_template

from app.dashboard import bp
from app.dashboard.charges import MODES
from app.dashboard.session import current_membership, member_required
from app.services import api_keys, disputes, webhooks


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
        failing_webhooks={
            name: count
            for name, mode in MODES.items()
            if (count := len(webhooks.failing_endpoints(membership.account_id, mode)))
        },
        open_disputes=[
            (name, case)
            for name, mode in MODES.items()
            for case in disputes.open_cases_by_deadline(membership.account_id, mode)
        ],
    )
