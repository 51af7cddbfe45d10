"""The merchant dashboard (server-rendered HTML under /dashboard).

`NAV_ITEMS` is the navigation in one place: each page's module adds itself there when it
exists, so the layout never links to a page that is not built. `STAFF_NAV_ITEMS` shows only
to platform staff.
"""

from flask import Blueprint, Flask, redirect, url_for
from flask_login import current_user

from app.dashboard.session import current_membership
from app.extensions import login_manager

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")

NAV_ITEMS = (
    ("dashboard.overview", "Overview"),
    ("dashboard.payments_page", "Payments"),
    ("dashboard.disputes_page", "Disputes"),
    ("dashboard.wallets_page", "Wallets"),
    ("dashboard.payouts_page", "Payouts"),
    ("dashboard.webhooks_page", "Webhooks"),
    ("dashboard.api_keys_page", "API keys"),
)
STAFF_NAV_ITEMS = (
    ("dashboard.back_office", "Back-office"),
    ("dashboard.dispute_operations", "Dispute desk"),
)


def visible_nav_items() -> tuple:
    """Merchant pages for someone acting in an account, plus back-office for staff."""
    items = NAV_ITEMS if current_membership() else ()
    return items + (STAFF_NAV_ITEMS if current_user.is_staff else ())


def register_dashboard(app: Flask) -> None:
    from app.dashboard import (  # noqa: F401 (views)
        api_keys,
        auth,
        back_office,
        charges,
        dispute_operations,
        disputes,
        overview,
        payments,
        payouts,
        wallets,
        webhooks,
    )

    login_manager.login_view = "dashboard.login"
    login_manager.login_message = "Please sign in to continue."
    login_manager.session_protection = "strong"
    app.register_blueprint(bp)

    @app.context_processor
    def dashboard_globals():
        return {"nav_items": visible_nav_items, "current_membership": current_membership}

    @app.get("/")
    def root():
        return redirect(url_for("dashboard.overview"))
