"""Webhooks in the dashboard: the endpoints of a mode (add, edit, enable or disable, rotate
the secret, delete, recover failed deliveries). The delivery log, one delivery and its resend
button are `webhook_deliveries`.

Every read and write goes through `app.services.webhooks`, the functions behind
`/v1/webhooks`, so the page obeys the API's rules: the recover button shows exactly where
`endpoints.resendability` allows it. The service knows no roles (an API key acts for its
whole account), so the role rule is added here (`webhook_role`, `managers_only`): managing
endpoints and deliveries is for OWNER and ADMIN, and a MEMBER who posts a form by hand gets
403. A signing secret is shown only in the answer to the POST that made it: never in a
redirect, a flash or the session.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from functools import wraps

from flask import flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import get_timezone, ngettext
from flask_babel import gettext as _

from app.dashboard import bp
from app.dashboard.forms import ConfirmForm, submitted
from app.dashboard.forms.webhooks import (
    EVENT_DESCRIPTIONS,
    WebhookEndpointEditForm,
    WebhookEndpointForm,
    WebhookRecoverForm,
    WebhookStatusForm,
)
from app.dashboard.params import MODES, mode_arg
from app.dashboard.session import current_membership, member_required
from app.dashboard.submit_once import show_error
from app.errors import Conflict, InvalidRequest
from app.extensions import db
from app.formats.labels import ENDPOINT_STATUS_LABELS
from app.models import EndpointStatus, WebhookEndpoint
from app.services.allowances import Allowance, manager_allowance
from app.services.webhooks import alerts, relay
from app.services.webhooks import endpoints as webhook_endpoints
from app.templating import refusal_text

FORM_FIELD_FOR_PARAM = {"url": "url", "events": "events"}


@dataclass(frozen=True)
class ShownSecret:
    """A signing secret to show once: of a new endpoint, or a rotated one."""

    endpoint: WebhookEndpoint
    secret: str
    new_endpoint: bool


@dataclass(frozen=True)
class Editing:
    """The endpoint whose edit form the page shows, and that form (with any errors)."""

    endpoint: WebhookEndpoint
    form: WebhookEndpointEditForm


def webhook_role() -> Allowance:
    """Managing endpoints and deliveries is for the account's OWNER and ADMIN."""
    return manager_allowance(
        current_membership(),
        _("Only an OWNER or ADMIN of the account can manage webhooks."),
        "WEBHOOK_ROLE_REQUIRED",
    )


def managers_only(view: Callable) -> Callable:
    """Managing endpoints and deliveries is for OWNER and ADMIN (after `member_required`)."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        webhook_role().require()
        return view(*args, **kwargs)

    return wrapper


@bp.get("/webhooks")
@member_required
def webhooks_page() -> ResponseReturnValue:
    """The mode's endpoints; `edit` (an endpoint id) opens that endpoint's edit form."""
    mode = mode_arg()
    editing = None
    if request.args.get("edit"):
        webhook_role().require()
        endpoint = webhook_endpoints.get_endpoint(g.account_id, MODES[mode], request.args["edit"])
        editing = Editing(endpoint, WebhookEndpointEditForm(formdata=None, obj=endpoint))
    return _endpoints_page(mode, editing=editing)


@bp.post("/webhooks")
@member_required
@managers_only
def add_webhook_endpoint() -> ResponseReturnValue:
    """Register an endpoint; its secret is in this answer only (201)."""
    mode = mode_arg()
    form = WebhookEndpointForm()
    if not form.validate_on_submit():
        return _endpoints_page(mode, add_form=form, status=400)
    try:
        endpoint, secret = webhook_endpoints.create_endpoint(
            g.account_id, MODES[mode], form.url.data or "", form.events.data or []
        )
    except (InvalidRequest, Conflict) as error:  # a rule of the URL or events, a taken URL
        db.session.rollback()
        show_error(form, error, FORM_FIELD_FOR_PARAM)
        return _endpoints_page(mode, add_form=form, status=error.status)
    db.session.commit()
    return _endpoints_page(mode, shown=ShownSecret(endpoint, secret, new_endpoint=True), status=201)


@bp.post("/webhooks/<endpoint_id>")
@member_required
@managers_only
def update_webhook_endpoint(endpoint_id: str) -> ResponseReturnValue:
    """Change an endpoint's url, events and status; a refusal is shown beside its field."""
    mode = mode_arg()
    endpoint = webhook_endpoints.get_endpoint(g.account_id, MODES[mode], endpoint_id)
    form = WebhookEndpointEditForm()
    if not form.validate_on_submit():
        return _endpoints_page(mode, editing=Editing(endpoint, form), status=400)
    changes = {
        "url": form.url.data or "",
        "events": form.events.data or [],
        "status": form.status.data,
    }
    try:
        webhook_endpoints.update_endpoint(g.account_id, MODES[mode], endpoint_id, changes)
    except (InvalidRequest, Conflict) as error:  # a rule of the URL or events, a taken URL
        db.session.rollback()  # the endpoint shows its stored values again
        show_error(form, error, FORM_FIELD_FOR_PARAM)
        return _endpoints_page(mode, editing=Editing(endpoint, form), status=error.status)
    db.session.commit()
    flash(_("Endpoint %(url)s updated.", url=endpoint.url), "info")
    return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)


@bp.post("/webhooks/<endpoint_id>/status")
@member_required
@managers_only
def switch_webhook_endpoint(endpoint_id: str) -> ResponseReturnValue:
    """The enable/disable button: an INACTIVE endpoint gets no new deliveries."""
    mode = mode_arg()
    form = submitted(WebhookStatusForm())
    endpoint = webhook_endpoints.update_endpoint(
        g.account_id, MODES[mode], endpoint_id, {"status": form.status.data}
    )
    db.session.commit()
    if endpoint.status is EndpointStatus.ACTIVE:
        flash(
            _("Endpoint %(url)s enabled: new events are delivered to it.", url=endpoint.url), "info"
        )
    else:
        flash(
            _("Endpoint %(url)s disabled: new events are not delivered to it.", url=endpoint.url),
            "info",
        )
    return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)


@bp.post("/webhooks/<endpoint_id>/rotate")
@member_required
@managers_only
def rotate_webhook_secret(endpoint_id: str) -> ResponseReturnValue:
    """A new secret at once (no overlap window), shown in this answer only."""
    mode = mode_arg()
    submitted(ConfirmForm())
    endpoint, secret = webhook_endpoints.rotate_secret(g.account_id, MODES[mode], endpoint_id)
    db.session.commit()
    return _endpoints_page(mode, shown=ShownSecret(endpoint, secret, new_endpoint=False))


@bp.post("/webhooks/<endpoint_id>/delete")
@member_required
@managers_only
def delete_webhook_endpoint(endpoint_id: str) -> ResponseReturnValue:
    """Delete an endpoint; its deliveries still waiting are cancelled, its log stays."""
    mode = mode_arg()
    submitted(ConfirmForm())
    url = webhook_endpoints.get_endpoint(g.account_id, MODES[mode], endpoint_id).url
    webhook_endpoints.delete_endpoint(g.account_id, MODES[mode], endpoint_id)
    db.session.commit()
    flash(
        _("Endpoint %(url)s deleted; deliveries still waiting for it were cancelled.", url=url),
        "info",
    )
    return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)


@bp.post("/webhooks/<endpoint_id>/recover")
@member_required
@managers_only
def recover_webhook_deliveries(endpoint_id: str) -> ResponseReturnValue:
    """Resend the endpoint's failed deliveries since a São Paulo time, then show them."""
    mode = mode_arg()
    form = WebhookRecoverForm()
    if not form.validate_on_submit():
        problems = " ".join(str(problem) for problem in form.since.errors)
        flash(f"{form.since.label.text}: {problems}", "error")
        return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)
    since = form.since.data.replace(tzinfo=get_timezone()).astimezone(UTC)
    try:
        count = relay.recover(g.account_id, MODES[mode], endpoint_id, since)
    except Conflict as error:  # the endpoint is INACTIVE
        flash(refusal_text(error), "error")
        return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)
    db.session.commit()
    flash(
        ngettext("%(num)d delivery queued again.", "%(num)d deliveries queued again.", count),
        "info",
    )
    return redirect(
        url_for("dashboard.webhook_deliveries_page", mode=mode, endpoint_id=endpoint_id), 303
    )


def _endpoints_page(
    mode: str,
    *,
    add_form: WebhookEndpointForm | None = None,
    editing: Editing | None = None,
    shown: ShownSecret | None = None,
    status: int = 200,
) -> tuple[str, int]:
    endpoints = webhook_endpoints.list_endpoints(g.account_id, MODES[mode])
    role = webhook_role()
    html = render_template(
        "dashboard/webhooks.html",
        mode=mode,
        endpoints=endpoints,
        failing=alerts.failing_endpoints(g.account_id, MODES[mode]),
        can_manage=role.allowed,
        recoverable={
            e.id for e in endpoints if (webhook_endpoints.resendability(e) & role).allowed
        },
        add_form=add_form or WebhookEndpointForm(formdata=None),
        editing=editing,
        shown=shown,
        descriptions=EVENT_DESCRIPTIONS,
        status_labels=ENDPOINT_STATUS_LABELS,
        status_form=WebhookStatusForm(formdata=None),
        recover_form=WebhookRecoverForm(formdata=None),
        confirm_form=ConfirmForm(formdata=None),
    )
    return html, status
