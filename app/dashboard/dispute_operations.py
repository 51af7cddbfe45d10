"""The back-office's dispute desk for platform staff: the open and appealed cases of every
account, and the dispute channel's actions on them (ask the merchant for evidence, decide),
plus recording a dispute the channel reported on a paid charge.

The actions call `disputes.cases` (`request_evidence`, `decide`, `open_case`), the
functions behind the sandbox's dispute channel, so the money each moves (the hold, its release
or loss) is decided in one place and audited there with the staff user. A case whose reported
amount differs from its charge's held nothing: the desk flags it for manual handling, and
staff confirm the amount to hold (`cases.confirm_amount`) before it can be lost.
"""

from collections.abc import Callable
from datetime import UTC

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_babel import get_timezone
from flask_babel import gettext as _
from flask_login import current_user

from app.dashboard import bp
from app.dashboard.actions import act_then_return
from app.dashboard.forms import submitted
from app.dashboard.forms.disputes import (
    DECISION_LABELS,
    BackOfficeDisputeForm,
    ConfirmDisputeAmountForm,
    DisputeDecisionForm,
)
from app.dashboard.session import staff_required
from app.dashboard.submit_once import show_error
from app.errors import ApiError
from app.extensions import db
from app.formats import charges as charge_format
from app.formats.labels import (
    DISPUTE_STATUS_LABELS,
    DISPUTE_TYPE_LABELS,
    MED_METHOD_LABELS,
    MODE_LABELS,
    UPLOADER_LABELS,
)
from app.models import DisputeCase, DisputeType
from app.services import dispute_review
from app.services.disputes import cases
from app.services.disputes.cases import DisputeNotice
from app.services.disputes.evidence import view_url
from app.templating import money

BACK_OFFICE_SOURCE = "back_office"
# The service names the notice's fields; the form names them the same way.
NOTICE_FIELD_FOR_PARAM = {"amount": "amount", "method": "method", "reason": "reason"}


@bp.get("/back-office/disputes")
@staff_required
def dispute_operations() -> ResponseReturnValue:
    return _desk_page()


@bp.post("/back-office/disputes")
@staff_required
def open_dispute_case() -> ResponseReturnValue:
    """Record a dispute the channel reported on a paid charge: the case opens and holds the
    amount; the same notification id again finds that case and changes nothing."""
    form = BackOfficeDisputeForm()
    if not form.validate_on_submit():
        return _desk_page(open_form=form, status=400)
    try:
        case, created = cases.open_case(
            charge_format.raw_id(form.charge_id.data.strip()),
            _notice(form),
            source=BACK_OFFICE_SOURCE,
        )
    except ApiError as error:
        db.session.rollback()
        show_error(form, error, NOTICE_FIELD_FOR_PARAM)
        return _desk_page(open_form=form, status=error.status)
    db.session.commit()
    if created:
        flash(_("Case %(id)s opened: %(held)s", id=case.id, held=_held(case)), "info")
    else:
        flash(
            _(
                "This notification was already recorded as case %(id)s; nothing changed.",
                id=case.id,
            ),
            "info",
        )
    return redirect(url_for("dashboard.dispute_operations"), 303)


@bp.post("/back-office/disputes/<case_id>/request-evidence")
@staff_required
def request_dispute_evidence(case_id: str) -> ResponseReturnValue:
    """Ask the merchant for evidence: the case records when, and the merchant is notified."""
    return _acted(
        lambda: cases.request_evidence(case_id, current_user.id),
        lambda case: _("Evidence requested for case %(id)s; the merchant is notified.", id=case.id),
    )


@bp.post("/back-office/disputes/<case_id>/decision")
@staff_required
def decide_dispute(case_id: str) -> ResponseReturnValue:
    """Apply the channel's decision; the held amount is released or sent to the payer."""
    form = submitted(DisputeDecisionForm())
    return _acted(
        lambda: cases.decide(case_id, form.decision.data, current_user.id, form.note.data or None),
        lambda case: _(
            "Case %(id)s decided: %(decision)s.",
            id=case.id,
            decision=DECISION_LABELS[form.decision.data],
        ),
    )


@bp.post("/back-office/disputes/<case_id>/confirm-amount")
@staff_required
def confirm_dispute_amount(case_id: str) -> ResponseReturnValue:
    """Settle a case whose amount differed: the confirmed amount is held from the merchant's
    wallet and the charge becomes disputed."""
    form = ConfirmDisputeAmountForm()
    if not form.validate_on_submit():
        flash(f"{form.amount.label.text}: " + " ".join(form.amount.errors), "error")
        return redirect(url_for("dashboard.dispute_operations"), 303)
    return _acted(
        lambda: cases.confirm_amount(case_id, form.amount.data, current_user.id),
        lambda case: _("Case %(id)s: %(held)s", id=case.id, held=_held(case)),
    )


def _desk_page(
    *, open_form: BackOfficeDisputeForm | None = None, status: int = 200
) -> tuple[str, int]:
    html = render_template(
        "dashboard/back_office_disputes.html",
        items=dispute_review.cases_under_review(),
        view_url=view_url,  # signed for 5 minutes from now, so made at render time
        decision_form=DisputeDecisionForm(formdata=None),
        confirm_form=ConfirmDisputeAmountForm(formdata=None),
        open_form=open_form or BackOfficeDisputeForm(formdata=None),
        status_labels=DISPUTE_STATUS_LABELS,
        type_labels=DISPUTE_TYPE_LABELS,
        method_labels=MED_METHOD_LABELS,
        uploader_labels=UPLOADER_LABELS,
        mode_labels=MODE_LABELS,
    )
    return html, status


def _acted(
    act: Callable[[], DisputeCase], outcome: Callable[[DisputeCase], str]
) -> ResponseReturnValue:
    """Commit a staff action, or show why the service refused it (say, someone decided the
    case first) on the page."""
    return act_then_return(act, outcome, url_for("dashboard.dispute_operations"))


def _notice(form: BackOfficeDisputeForm) -> DisputeNotice:
    """The form as the channel's notification; the deadline is typed in São Paulo time."""
    deadline = form.response_deadline.data
    return DisputeNotice(
        external_id=form.external_id.data,
        type=DisputeType(form.type.data),
        amount=form.amount.data,
        method=form.method.data or None,
        reason=(form.reason.data or "").strip() or None,
        response_deadline=deadline.replace(tzinfo=get_timezone()).astimezone(UTC)
        if deadline
        else None,
    )


def _held(case: DisputeCase) -> str:
    if case.under_review:
        return _(
            "the reported amount differs from the charge's, so nothing was held: confirm the "
            "amount to hold before the case can be lost."
        )
    return _(
        "%(amount)s held from the merchant's wallet.",
        amount=money(case.held_amount, case.currency),
    )
