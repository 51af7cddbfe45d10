"""The merchant dashboard (server-rendered HTML under /dashboard).

`NAV_ITEMS` is the navigation in one place: each page's module adds itself there when it
exists, so the layout never links to a page that is not built. `STAFF_NAV_ITEMS` shows only
to platform staff.
"""

from flask import Blueprint, Flask, redirect, url_for

from app.extensions import login_manager

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")

NAV_ITEMS = (
    ("dashboard.overview", "Overview"),
    ("dashboard.api_keys_page", "API keys"),
)
STAFF_NAV_ITEMS = (("dashboard.back_office", "Back-office"),)


def register_dashboard(app: Flask) -> None:
    from app.dashboard import api_keys, auth, back_office, overview, session  # noqa: F401

    login_manager.login_view = "dashboard.login"
    login_manager.login_message = "Please sign in to continue."
    login_manager.session_protection = "strong"
    app.register_blueprint(bp)

    @app.context_processor
    def dashboard_globals():
        return {
            "nav_items": NAV_ITEMS,
            "staff_nav_items": STAFF_NAV_ITEMS,
            "current_membership": session.current_membership,
        }

    @app.get("/")
    def root():
        return redirect(url_for("dashboard.overview"))
