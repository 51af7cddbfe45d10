"""One dispute case in the dashboard: every field, its timeline, the appeal and accept forms,
and its evidence. The account's list of cases is `disputes`.

Every read and write goes through `services/disputes/`, the functions behind `/v1/med/cases`,
so the page shows what the API answers and the forms obey its rules: a form is shown exactly
when the service allows its action (`appealability`, `acceptability`, `attachability`). Those
functions know no roles (an API key acts for its whole account), so the role rule is added
here, as on the payments page: appealing, accepting and attaching evidence are for OWNER and
ADMIN, and a MEMBER who posts by hand gets 403. A refusal by the service is shown as a flash
message.

Evidence never passes through this service: the page's script (static/evidence-upload.js)
asks `create_evidence_upload` for a ticket, sends the file from the browser straight to the
ticket's signed address, then asks `complete_evidence_upload` to confirm it. Those two answer
JSON, refusals included (the API's envelope), so the script can show the service's message.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import wraps

from flask import flash, g, jsonify, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from app.dashboard import bp
from app.dashboard.actions import act_then_return
from app.dashboard.disputes import case_charge_id
from app.dashboard.forms.disputes import AcceptDisputeForm, AppealForm
from app.dashboard.params import MODES, mode_arg
from app.dashboard.session import current_membership, member_required
from app.errors import ApiError, InvalidRequest, error_envelope
from app.extensions import db
from app.formats.disputes import (
    EvidenceSchema,
    UploadTicketSchema,
    evidence_fields,
    upload_ticket_fields,
)
from app.formats.labels import (
    DISPUTE_STATUS_LABELS,
    DISPUTE_TYPE_LABELS,
    MED_METHOD_LABELS,
    MONEY_OUTCOME_LABELS,
    UPLOADER_LABELS,
)
from app.models import DisputeCase, DisputeEvidence, DisputeStatus, EvidenceUploader
from app.services.allowances import Allowance, manager_allowance
from app.services.disputes import allowances, cases, listing
from app.services.disputes import evidence as dispute_evidence
from app.services.disputes.notices import OUTCOME_EFFECTS
from app.storage import ALLOWED_TYPES, MAX_EVIDENCE_BYTES
from app.templating import money, refusal_text

CLOSING_TITLES = {
    DisputeStatus.ACCEPTED: _l("You accepted the dispute"),
    DisputeStatus.REJECTED: _l("Decided against you (rejected)"),
    DisputeStatus.CLOSED: _l("Closed"),
}
ROLE_REFUSAL = _l("Only an OWNER or ADMIN of the account can answer disputes or attach evidence.")


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    title: str
    detail: str | None = None


@bp.get("/disputes/<case_id>")
@member_required
def dispute_page(case_id: str) -> ResponseReturnValue:
    """Every field of one case, its timeline and evidence, and the answers it still allows."""
    return _detail_page(mode_arg(), case_id)


@bp.post("/disputes/<case_id>/appeal")
@member_required
def appeal_dispute(case_id: str) -> ResponseReturnValue:
    """Contest an open case (OWNER and ADMIN only); what was held stays held until the
    decision."""
    mode = mode_arg()
    _role().require()
    form = AppealForm()
    if not form.validate_on_submit():
        return _detail_page(mode, case_id, appeal_form=form, status=400)
    return _answered(
        mode,
        case_id,
        lambda: cases.appeal(g.account_id, MODES[mode], case_id, form.reason.data, current_user.id),
        lambda case: _("Appeal sent: %(held)s", held=held_until_decided(case)),
    )


@bp.post("/disputes/<case_id>/accept")
@member_required
def accept_dispute(case_id: str) -> ResponseReturnValue:
    """Give up an open case (OWNER and ADMIN only): final, the held amount goes to the payer."""
    mode = mode_arg()
    _role().require()
    form = AcceptDisputeForm()
    if not form.validate_on_submit():
        return _detail_page(mode, case_id, accept_form=form, status=400)
    return _answered(
        mode,
        case_id,
        lambda: cases.accept(g.account_id, MODES[mode], case_id, current_user.id),
        lambda case: _(
            "You accepted the dispute: %(amount)s is returned to the payer. This is final.",
            amount=money(case.amount, case.currency),
        ),
    )


def json_errors(view: Callable) -> Callable:
    """A refusal as the API's JSON envelope rather than an HTML page, for the upload script."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except ApiError as error:
            db.session.rollback()
            response = jsonify(error_envelope(error))
            response.status_code = error.status
            response.headers.update(error.headers)
            return response

    return wrapper


@bp.post("/disputes/<case_id>/evidence")
@member_required
@json_errors
def create_evidence_upload(case_id: str) -> ResponseReturnValue:
    """Step 1 of 3 (OWNER and ADMIN only): JSON `{file_name, file_size, mime_type}` → 201 with
    the upload ticket and the address that confirms it (`complete_url`)."""
    mode = mode_arg()
    _role().require()
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise InvalidRequest("Send a JSON object with file_name, file_size and mime_type.")
    evidence, ticket = dispute_evidence.create_upload(
        g.account_id,
        MODES[mode],
        case_id,
        file_name=body.get("file_name"),
        file_size=body.get("file_size"),
        mime_type=body.get("mime_type"),
        uploaded_by=EvidenceUploader.MERCHANT,
    )
    db.session.commit()
    complete_url = url_for(
        "dashboard.complete_evidence_upload", case_id=case_id, evidence_id=evidence.id, mode=mode
    )
    ticket_body = UploadTicketSchema().dump(upload_ticket_fields(evidence, ticket))
    return jsonify({**ticket_body, "complete_url": complete_url}), 201


@bp.post("/disputes/<case_id>/evidence/<evidence_id>/complete")
@member_required
@json_errors
def complete_evidence_upload(case_id: str, evidence_id: str) -> ResponseReturnValue:
    """Step 3 of 3 (OWNER and ADMIN only): confirm the file reached the storage; the page the
    script reloads then lists it."""
    mode = mode_arg()
    _role().require()
    evidence = dispute_evidence.complete_upload(g.account_id, MODES[mode], case_id, evidence_id)
    db.session.commit()
    flash(_("Evidence attached: %(file)s.", file=evidence.file_name), "info")
    return jsonify(
        EvidenceSchema().dump(evidence_fields(evidence, dispute_evidence.view_url(evidence)))
    )


def timeline(case: DisputeCase, evidence: list[DisputeEvidence]) -> list[TimelineEntry]:
    """What happened to the case, oldest first, from its own timestamps and its confirmed
    evidence."""
    entries = [TimelineEntry(case.opened_at, _("Dispute opened"), _opening_effect(case))]
    if case.evidence_requested_at:
        entries.append(
            TimelineEntry(
                case.evidence_requested_at,
                _("Evidence requested"),
                _("Acme Pay asked you for evidence: attach it on this page."),
            )
        )
    if case.appealed_at:
        entries.append(TimelineEntry(case.appealed_at, _("You appealed"), case.appeal_reason))
    for item in evidence:
        detail = _evidence_from(item)
        entries.append(TimelineEntry(item.uploaded_at, _("Evidence attached"), detail))
    if case.closed_at:
        title = str(CLOSING_TITLES[case.status])
        entries.append(TimelineEntry(case.closed_at, title, _outcome(case)))
    return sorted(entries, key=lambda entry: entry.at)


def held_until_decided(case: DisputeCase) -> str:
    """What an appealed case keeps held, from its own held amount: a case whose reported
    amount differed held nothing (or, once confirmed, another amount), and a completed refund
    lowers a hold, so none may claim the disputed amount waits on the decision."""
    if not case.held_amount:
        return _("nothing was held from your wallet for this dispute, so no money waits on it.")
    if case.held_amount == case.amount:
        return _("the amount stays held until the dispute is decided.")
    held = money(case.held_amount, case.currency)
    return _("%(held)s stays held from your wallet until the dispute is decided.", held=held)


def _opening_effect(case: DisputeCase) -> str:
    if case.held_amount:
        held = money(case.held_amount, case.currency)
        return _("%(held)s held from your available balance until the decision.", held=held)
    return _(
        "The reported amount differs from the charge's, so nothing was held; "
        "our operations team is handling the case."
    )


def _evidence_from(item: DisputeEvidence) -> str:
    """A timeline entry's file and who attached it, one whole sentence per sender."""
    if item.uploaded_by is EvidenceUploader.MERCHANT:
        return _("%(file)s, from the merchant", file=item.file_name)
    if item.uploaded_by is EvidenceUploader.PARTNER:
        return _("%(file)s, from the partner", file=item.file_name)
    return _("%(file)s, from the platform", file=item.file_name)


def _outcome(case: DisputeCase) -> str:
    if not case.held_amount:
        return _(
            "Money outcome: %(outcome)s. Nothing was held, so no money moved.",
            outcome=MONEY_OUTCOME_LABELS[case.money_outcome],
        )
    return _(
        "Money outcome: %(outcome)s: %(effect)s (%(held)s).",
        outcome=MONEY_OUTCOME_LABELS[case.money_outcome],
        effect=OUTCOME_EFFECTS[case.money_outcome],
        held=money(case.held_amount, case.currency),
    )


def _detail_page(
    mode: str,
    case_id: str,
    *,
    appeal_form: AppealForm | None = None,
    accept_form: AcceptDisputeForm | None = None,
    status: int = 200,
) -> tuple[str, int]:
    case = listing.get_case(g.account_id, MODES[mode], case_id)
    evidence = dispute_evidence.list_evidence(g.account_id, MODES[mode], case_id)
    role = _role()
    appealability, acceptability = allowances.appealability(case), allowances.acceptability(case)
    html = render_template(
        "dashboard/dispute.html",
        mode=mode,
        case=case,
        charge_id=case_charge_id(case),
        evidence=evidence,
        view_url=dispute_evidence.view_url,  # signed for 5 minutes from now, so made at render time
        timeline=timeline(case, evidence),
        held_until_decided=held_until_decided(case),
        outcome_effects=OUTCOME_EFFECTS,
        status_labels=DISPUTE_STATUS_LABELS,
        type_labels=DISPUTE_TYPE_LABELS,
        method_labels=MED_METHOD_LABELS,
        outcome_labels=MONEY_OUTCOME_LABELS,
        uploader_labels=UPLOADER_LABELS,
        can_appeal=(appealability & role).allowed,
        can_accept=(acceptability & role).allowed,
        can_attach=(allowances.attachability(case) & role).allowed,
        answer_refusal=refusal_text(role.refusal)
        if appealability.allowed or acceptability.allowed
        else None,
        appeal_form=appeal_form or AppealForm(formdata=None),
        accept_form=accept_form or AcceptDisputeForm(formdata=None),
        accepted_types=",".join(sorted(ALLOWED_TYPES)),
        max_evidence_mb=MAX_EVIDENCE_BYTES // (1024 * 1024),
    )
    return html, status


def _answered(
    mode: str,
    case_id: str,
    answer: Callable[[], DisputeCase],
    outcome: Callable[[DisputeCase], str],
) -> ResponseReturnValue:
    """Commit the merchant's answer, or show why the service refused it (say, the case was
    decided meanwhile) as a flash message; a case outside the account stays a 404."""
    page = url_for("dashboard.dispute_page", case_id=case_id, mode=mode)
    return act_then_return(answer, outcome, page, missing_is_404=True)


def _role() -> Allowance:
    """Answering disputes and attaching evidence are for the account's OWNER and ADMIN."""
    refusal = str(ROLE_REFUSAL)  # in the reader's language, as the page and the script show it
    return manager_allowance(current_membership(), refusal, "DISPUTE_ROLE_REQUIRED")
