"""The back-office's page for what the live PSP reported that someone must look at
(`psp_notices`): a webhook the PSP would not confirm, a Pix that belongs to no charge, a value
this release does not know, something unreadable; and the live charges the PSP refused
lately, with the problem details it gave (`violacoes`, `correlationId`) for its support desk.

Resolving a notice only files it: the PSP reporting it again reopens it.
"""

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from app.dashboard import bp
from app.dashboard.session import staff_required
from app.extensions import db
from app.services import psp_notices

KIND_LABELS = {
    "unconfirmed_pix": _l("Webhook not confirmed by the PSP"),
    "unmatched_pix": _l("Pix of no charge"),
    "unknown_value": _l("Value unknown to this release"),
    "unreadable": _l("Unreadable report"),
}
# What a refused record is (`Refusal.what`), as the refusals table says it.
RECORD_LABELS = {"charge": _l("charge"), "refund": _l("refund")}


@bp.get("/back-office/psp")
@staff_required
def psp_notices_page() -> ResponseReturnValue:
    return render_template(
        "dashboard/back_office_psp.html",
        notices=psp_notices.open_notices(),
        refusals=psp_notices.recent_refusals(),
        kind_labels=KIND_LABELS,
        record_labels=RECORD_LABELS,
    )


@bp.post("/back-office/psp/<uuid:notice_id>/resolve")
@staff_required
def resolve_psp_notice(notice_id) -> ResponseReturnValue:
    notice = psp_notices.resolve(str(notice_id), current_user.id)
    db.session.commit()
    flash(
        _(
            "Notice %(subject)s resolved; it reopens if the PSP reports it again.",
            subject=notice.subject,
        ),
        "info",
    )
    return redirect(url_for("dashboard.psp_notices_page"), 303)
