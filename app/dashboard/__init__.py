"""The merchant dashboard (server-rendered HTML under /dashboard).

`NAV_ITEMS` is the navigation in one place: each page's module adds itself there when it
exists, so the layout never links to a page that is not built. `STAFF_NAV_ITEMS` shows only
to platform staff.
"""

from flask import Blueprint, Flask, g, redirect, url_for
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
MODE_PAGES = frozenset(endpoint for endpoint, _ in NAV_ITEMS) - {"dashboard.api_keys_page"}
STAFF_NAV_ITEMS = (
    ("dashboard.back_office", "Back-office"),
    ("dashboard.dispute_operations", "Dispute desk"),
    ("dashboard.psp_notices_page", "Live PSP"),
)


def visible_nav_items() -> tuple:
    """Merchant pages for someone acting in an account, plus back-office for staff."""
    items = NAV_ITEMS if current_membership() else ()
    return items + (STAFF_NAV_ITEMS if current_user.is_staff else ())


def page_mode() -> str | None:
    """The mode (test or live) the page shows, when it shows one: the layout names it and
    keeps it in the navigation's links, so moving between pages never switches mode."""
    return g.get("dashboard_mode")


def nav_mode_args(endpoint: str) -> dict:
    """A live page's navigation links stay live; test is every page's default, so it is left
    out of the address. API keys and staff pages show both modes and take none."""
    if page_mode() == "live" and endpoint in MODE_PAGES:
        return {"mode": "live"}
    return {}


def register_dashboard(app: Flask) -> None:
    from app.dashboard import (  # noqa: F401 (views)
        api_keys,
        auth,
        back_office,
        charges,
        dispute_detail,
        dispute_operations,
        disputes,
        overview,
        payment_detail,
        payments,
        payouts,
        psp_notices,
        wallets,
        webhook_deliveries,
        webhooks,
    )

    login_manager.login_view = "dashboard.login"
    login_manager.login_message = "Please sign in to continue."
    login_manager.session_protection = "strong"
    app.register_blueprint(bp)

    @app.context_processor
    def dashboard_globals():
        return {
            "nav_items": visible_nav_items,
            "current_membership": current_membership,
            "page_mode": page_mode,
            "nav_mode_args": nav_mode_args,
        }

    @app.get("/")
    def root():
        return redirect(url_for("dashboard.overview"))
