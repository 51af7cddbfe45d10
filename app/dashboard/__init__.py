"""The merchant dashboard (server-rendered HTML under /dashboard).

`NAV_ITEMS` is the navigation in one place: each page's module adds itself there when it
exists, so the layout never links to a page that is not built. `STAFF_NAV_ITEMS` shows only
to platform staff.
"""

from flask import Blueprint, Flask, g, redirect, request, url_for
from flask_babel import get_locale
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from app.dashboard.forms.access import LanguageForm
from app.dashboard.session import current_membership
from app.extensions import login_manager
from app.formats.labels import ROLE_LABELS

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")

NAV_ITEMS = (
    ("dashboard.overview", _l("Overview")),
    ("dashboard.payments_page", _l("Payments")),
    ("dashboard.disputes_page", _l("Disputes")),
    ("dashboard.wallets_page", _l("Wallets")),
    ("dashboard.payouts_page", _l("Payouts")),
    ("dashboard.webhooks_page", _l("Webhooks")),
    ("dashboard.api_keys_page", _l("API keys")),
)
MODE_PAGES = frozenset(endpoint for endpoint, _ in NAV_ITEMS) - {"dashboard.api_keys_page"}
STAFF_NAV_ITEMS = (
    ("dashboard.back_office", _l("Back-office")),
    ("dashboard.dispute_operations", _l("Dispute desk")),
    ("dashboard.psp_notices_page", _l("Live PSP")),
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


def language_form() -> LanguageForm:
    """The top bar's language menu, on the language shown, returning to this page."""
    return LanguageForm(
        formdata=None, locale=str(get_locale()), next=request.full_path.removesuffix("?")
    )


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
    login_manager.login_message = _l("Please sign in to continue.")
    login_manager.localize_callback = str  # flashed in the language of the page that asked
    login_manager.session_protection = "strong"
    app.register_blueprint(bp)

    @app.context_processor
    def dashboard_globals():
        return {
            "nav_items": visible_nav_items,
            "current_membership": current_membership,
            "page_mode": page_mode,
            "nav_mode_args": nav_mode_args,
            "language_form": language_form,
            "role_labels": ROLE_LABELS,
        }

    @app.get("/")
    def root():
        return redirect(url_for("dashboard.overview"))
