"""Back-office for platform staff: the merchant accounts on the platform.

Payout approvals and dispute handling join this area with the payouts and disputes work.
"""

from flask import render_template

from app.dashboard import bp
from app.dashboard.session import staff_required
from app.services import accounts


@bp.get("/back-office")
@staff_required
def back_office():
    return render_template("dashboard/back_office.html", summaries=accounts.platform_accounts())
