"""Webhooks in the dashboard: the endpoints of a mode (add, edit, enable or disable, rotate
the secret, delete, recover failed deliveries), the delivery log with its filters and CSV
export, and one delivery with what was sent and answered, and a resend button.

Every read and write goes through `app.services.webhooks`, the functions behind
`/v1/webhooks`, so the page obeys the API's rules: the recover and resend buttons show exactly
where `endpoints.resendability` allows them. The service knows no roles (an API key acts for
its whole account), so the role rule is added here: managing endpoints is for OWNER and
ADMIN, and a MEMBER who posts a form by hand gets 403. A signing secret is shown only in
the answer to the POST that made it: never in a redirect, a flash or the session.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from functools import wraps

from flask import flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.exports import EXPORT_CHUNK, csv_response, spreadsheet_cell, utc_text
from app.dashboard.forms import (
    ConfirmForm,
    WebhookEndpointEditForm,
    WebhookEndpointForm,
    WebhookRecoverForm,
    WebhookStatusForm,
    submitted,
)
from app.dashboard.params import MODES, QueryFilters, choice_arg, mode_arg, page_arg
from app.dashboard.session import current_membership, member_required
from app.dashboard.submit_once import show_error
from app.errors import Conflict, InvalidRequest
from app.extensions import db
from app.formats import event_catalog
from app.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookEndpoint
from app.services.allowances import Allowance, manager_allowance
from app.services.webhooks import alerts, relay
from app.services.webhooks import delivery as webhook_delivery
from app.services.webhooks import endpoints as webhook_endpoints
from app.services.webhooks import log as delivery_log
from app.templating import DISPLAY_TIMEZONE

PER_PAGE = 25
DELIVERY_STATUSES = tuple(status.value for status in DeliveryStatus)
EVENT_TYPES = event_catalog.DELIVERABLE
EVENT_DESCRIPTIONS = {entry.event: entry.description for entry in event_catalog.CATALOG}
FORM_FIELD_FOR_PARAM = {"url": "url", "events": "events"}
CSV_COLUMNS = (
    "id",
    "created_at",
    "event_type",
    "event_id",
    "endpoint_id",
    "endpoint_url",
    "status",
    "attempts",
    "max_attempts",
    "last_status_code",
    "last_error",
    "last_attempt_at",
    "next_retry_at",
    "delivered_at",
    "resent_from_id",
)


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


@dataclass(frozen=True)
class DeliveryFilters(QueryFilters):
    """The log's query string, so every link (mode, filters, pages) keeps the others."""

    mode: str = "test"
    status: str | None = None
    event_type: str | None = None
    endpoint_id: str | None = None
    page: int = 1


def managers_only(view: Callable) -> Callable:
    """Managing endpoints and deliveries is for OWNER and ADMIN (after `member_required`)."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        _role().require()
        return view(*args, **kwargs)

    return wrapper


@bp.get("/webhooks")
@member_required
def webhooks_page() -> ResponseReturnValue:
    """The mode's endpoints; `edit` (an endpoint id) opens that endpoint's edit form."""
    mode = mode_arg()
    editing = None
    if request.args.get("edit"):
        _role().require()
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
    except InvalidRequest as error:
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
    except InvalidRequest as error:
        db.session.rollback()  # the endpoint shows its stored values again
        show_error(form, error, FORM_FIELD_FOR_PARAM)
        return _endpoints_page(mode, editing=Editing(endpoint, form), status=error.status)
    db.session.commit()
    flash(f"Endpoint {endpoint.url} updated.", "info")
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
        flash(f"Endpoint {endpoint.url} enabled: new events are delivered to it.", "info")
    else:
        flash(f"Endpoint {endpoint.url} disabled: new events are not delivered to it.", "info")
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
    flash(f"Endpoint {url} deleted; deliveries still waiting for it were cancelled.", "info")
    return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)


@bp.post("/webhooks/<endpoint_id>/recover")
@member_required
@managers_only
def recover_webhook_deliveries(endpoint_id: str) -> ResponseReturnValue:
    """Resend the endpoint's failed deliveries since a São Paulo time, then show them."""
    mode = mode_arg()
    form = WebhookRecoverForm()
    if not form.validate_on_submit():
        flash(f"{form.since.label.text}: " + " ".join(form.since.errors), "error")
        return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)
    since = form.since.data.replace(tzinfo=DISPLAY_TIMEZONE).astimezone(UTC)
    try:
        count = relay.recover(g.account_id, MODES[mode], endpoint_id, since)
    except Conflict as error:  # the endpoint is INACTIVE
        flash(error.message, "error")
        return redirect(url_for("dashboard.webhooks_page", mode=mode), 303)
    db.session.commit()
    flash(f"{count} {'delivery' if count == 1 else 'deliveries'} queued again.", "info")
    return redirect(
        url_for("dashboard.webhook_deliveries_page", mode=mode, endpoint_id=endpoint_id), 303
    )


@bp.get("/webhooks/deliveries")
@member_required
def webhook_deliveries_page() -> ResponseReturnValue:
    """One page of the mode's delivery log, newest first, with its filters."""
    filters, endpoints = _delivery_filters()
    rows, total = delivery_log.list_deliveries(
        g.account_id,
        MODES[filters.mode],
        status=filters.status,
        event_type=filters.event_type,
        endpoint_id=filters.endpoint_id,
        limit=PER_PAGE,
        offset=(filters.page - 1) * PER_PAGE,
    )
    return render_template(
        "dashboard/webhook_deliveries.html",
        filters=filters,
        deliveries=rows,
        total=total,
        last_page=max(1, math.ceil(total / PER_PAGE)),
        endpoint_urls={e.id: e.url for e in endpoints},  # the filter's choices, in order
        statuses=DELIVERY_STATUSES,
        event_types=EVENT_TYPES,
        csv_args=filters.args(page=1),  # the export is every page
    )


@bp.get("/webhooks/deliveries/export.csv")
@member_required
def webhook_deliveries_csv() -> ResponseReturnValue:
    """The filtered log, every page of it, streamed as it is read (times in UTC); what was
    sent and answered stays on each delivery's page."""
    filters, endpoints = _delivery_filters()
    urls = {endpoint.id: endpoint.url for endpoint in endpoints}
    rows = delivery_log.delivery_rows(
        g.account_id,
        MODES[filters.mode],
        status=filters.status,
        event_type=filters.event_type,
        endpoint_id=filters.endpoint_id,
        chunk_size=EXPORT_CHUNK,
    )
    values = (_csv_values(delivery, urls.get(delivery.endpoint_id, "")) for delivery in rows)
    return csv_response(CSV_COLUMNS, values, f"webhook-deliveries-{filters.mode}.csv")


@bp.get("/webhooks/deliveries/<delivery_id>")
@member_required
def webhook_delivery_page(delivery_id: str) -> ResponseReturnValue:
    """What one delivery sent (payload, headers) and the last answer it got."""
    mode = mode_arg()
    delivery = delivery_log.get_delivery(g.account_id, MODES[mode], delivery_id)
    endpoints = {e.id: e for e in webhook_endpoints.list_endpoints(g.account_id, MODES[mode])}
    endpoint = endpoints.get(delivery.endpoint_id)  # None once deleted: nothing to resend to
    role = _role()
    return render_template(
        "dashboard/webhook_delivery.html",
        mode=mode,
        delivery=delivery,
        endpoint=endpoint,
        payload=json.dumps(delivery.payload, indent=2, ensure_ascii=False),
        headers=_sent_headers(delivery),
        signature_format=(
            "sha256=<hex>"
            if delivery.event_type in event_catalog.LEGACY_EVENTS
            else "t=<unix time>,v1=<hex>"
        ),
        can_manage=role.allowed,
        can_resend=endpoint is not None
        and (webhook_endpoints.resendability(endpoint) & role).allowed,
        confirm_form=ConfirmForm(formdata=None),
    )


@bp.post("/webhooks/deliveries/<delivery_id>/resend")
@member_required
@managers_only
def resend_webhook_delivery(delivery_id: str) -> ResponseReturnValue:
    """Send a delivery again as a new delivery of the same event, and show that one."""
    mode = mode_arg()
    submitted(ConfirmForm())
    try:
        copy = relay.resend(g.account_id, MODES[mode], delivery_id)
    except Conflict as error:  # the endpoint is INACTIVE
        flash(error.message, "error")
        return redirect(
            url_for("dashboard.webhook_delivery_page", delivery_id=delivery_id, mode=mode), 303
        )
    db.session.commit()
    flash("Queued again: this is the new delivery of the same event.", "info")
    return redirect(url_for("dashboard.webhook_delivery_page", delivery_id=copy.id, mode=mode), 303)


def _endpoints_page(
    mode: str,
    *,
    add_form: WebhookEndpointForm | None = None,
    editing: Editing | None = None,
    shown: ShownSecret | None = None,
    status: int = 200,
) -> tuple[str, int]:
    endpoints = webhook_endpoints.list_endpoints(g.account_id, MODES[mode])
    role = _role()
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
        status_form=WebhookStatusForm(formdata=None),
        recover_form=WebhookRecoverForm(formdata=None),
        confirm_form=ConfirmForm(formdata=None),
    )
    return html, status


def _role() -> Allowance:
    """Managing endpoints and deliveries is for the account's OWNER and ADMIN."""
    return manager_allowance(
        current_membership(),
        "Only an OWNER or ADMIN of the account can manage webhooks.",
        "WEBHOOK_ROLE_REQUIRED",
    )


def _delivery_filters() -> tuple[DeliveryFilters, list[WebhookEndpoint]]:
    """The log's filters, and the mode's endpoints (not deleted) `endpoint_id` is one of."""
    filters = DeliveryFilters(
        mode=mode_arg(),
        status=choice_arg("status", DELIVERY_STATUSES),
        event_type=choice_arg(
            "event_type", EVENT_TYPES, "event_type is an event name from the catalog."
        ),
        endpoint_id=request.args.get("endpoint_id") or None,
        page=page_arg(),
    )
    endpoints = webhook_endpoints.list_endpoints(g.account_id, MODES[filters.mode])
    if filters.endpoint_id is not None and filters.endpoint_id not in {e.id for e in endpoints}:
        raise InvalidRequest("endpoint_id is one of this mode's endpoints.", param="endpoint_id")
    return filters, endpoints


def _csv_values(delivery: WebhookDelivery, endpoint_url: str) -> tuple:
    """One delivery; free text goes through the wallet export's formula guard. A deleted
    endpoint's address is left empty, as the log shows it."""
    return (
        delivery.id,
        utc_text(delivery.created_at),
        delivery.event_type,
        delivery.event_id,
        delivery.endpoint_id,
        spreadsheet_cell(endpoint_url),
        str(delivery.status),
        delivery.attempts,
        delivery.max_attempts,
        "" if delivery.last_status_code is None else delivery.last_status_code,
        spreadsheet_cell(delivery.last_error or ""),
        utc_text(delivery.last_attempt_at),
        utc_text(delivery.next_retry_at),
        utc_text(delivery.delivered_at),
        delivery.resent_from_id or "",
    )


def _sent_headers(delivery: WebhookDelivery) -> tuple[tuple[str, str], ...]:
    """The headers every attempt sends besides the signature (see `webhooks.delivery.prepare`)."""
    return (
        ("Content-Type", "application/json"),
        ("User-Agent", webhook_delivery.USER_AGENT),
        ("X-Acme-Event-Type", delivery.event_type),
        ("X-Acme-Delivery-Id", delivery.id),
    )
