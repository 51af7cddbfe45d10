"""The webhook delivery log in the dashboard: a mode's deliveries with their filters and CSV
export, and one delivery with what was sent and answered, and a resend button. The endpoints
page, and the role rule both pages follow, are `webhooks`.

Every read and write goes through `app.services.webhooks`, the functions behind
`/v1/webhooks`, so the page obeys the API's rules: the resend button shows exactly where
`endpoints.resendability` allows it.
"""

import json
import math
from dataclasses import dataclass

from flask import flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _

from app.dashboard import bp
from app.dashboard.exports import EXPORT_CHUNK, csv_response, spreadsheet_cell
from app.dashboard.forms import ConfirmForm, submitted
from app.dashboard.params import MODES, QueryFilters, choice_arg, mode_arg, page_arg
from app.dashboard.session import member_required
from app.dashboard.webhooks import managers_only, webhook_role
from app.errors import Conflict, InvalidRequest
from app.extensions import db
from app.formats import event_catalog
from app.formats.labels import DELIVERY_STATUS_LABELS
from app.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from app.services.webhooks import delivery as webhook_delivery
from app.services.webhooks import endpoints as webhook_endpoints
from app.services.webhooks import log as delivery_log
from app.services.webhooks import relay
from app.templating import refusal_text

PER_PAGE = 25
DELIVERY_STATUSES = tuple(status.value for status in DeliveryStatus)
EVENT_TYPES = event_catalog.DELIVERABLE
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
class DeliveryFilters(QueryFilters):
    """The log's query string, so every link (mode, filters, pages) keeps the others."""

    mode: str = "test"
    status: str | None = None
    event_type: str | None = None
    endpoint_id: str | None = None
    page: int = 1


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
        status_labels=DELIVERY_STATUS_LABELS,  # the status filter's choices and the badges
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
    role = webhook_role()
    return render_template(
        "dashboard/webhook_delivery.html",
        mode=mode,
        delivery=delivery,
        endpoint=endpoint,
        status_labels=DELIVERY_STATUS_LABELS,
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
        flash(refusal_text(error), "error")
        return redirect(
            url_for("dashboard.webhook_delivery_page", delivery_id=delivery_id, mode=mode), 303
        )
    db.session.commit()
    flash(_("Queued again: this is the new delivery of the same event."), "info")
    return redirect(url_for("dashboard.webhook_delivery_page", delivery_id=copy.id, mode=mode), 303)


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
        delivery.created_at,
        delivery.event_type,
        delivery.event_id,
        delivery.endpoint_id,
        spreadsheet_cell(endpoint_url),
        str(delivery.status),
        delivery.attempts,
        delivery.max_attempts,
        "" if delivery.last_status_code is None else delivery.last_status_code,
        spreadsheet_cell(delivery.last_error or ""),
        delivery.last_attempt_at,
        delivery.next_retry_at,
        delivery.delivered_at,
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
