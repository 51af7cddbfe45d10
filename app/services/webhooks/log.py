"""The delivery log: an account's deliveries, filtered and newest first, for the API, the
dashboard and its CSV export, plus the counts by status and one delivery by id.
"""

from collections.abc import Iterator

import sqlalchemy as sa

from app.extensions import db
from app.marks import translatable
from app.models import DeliveryStatus, KeyMode, WebhookDelivery
from app.services import tenancy
from app.services.paging import window

LOG_ORDER = (WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())  # newest first


def list_deliveries(
    account_id: str,
    mode: KeyMode,
    *,
    status: str | None = None,
    event_type: str | None = None,
    endpoint_id: str | None = None,
    limit: int = 25,
    offset: int = 0,
) -> tuple[list[WebhookDelivery], int]:
    """The delivery log, newest first, and how many match."""
    conditions = _log_conditions(account_id, mode, status, event_type, endpoint_id)
    log = sa.select(WebhookDelivery).where(*conditions).order_by(*LOG_ORDER)
    found = window(log, offset, limit)
    return found.rows, found.total


def delivery_rows(
    account_id: str,
    mode: KeyMode,
    *,
    status: str | None = None,
    event_type: str | None = None,
    endpoint_id: str | None = None,
    chunk_size: int,
) -> Iterator[WebhookDelivery]:
    """The whole log `list_deliveries` pages through, in its order, for an export: one query
    read `chunk_size` rows at a time (`yield_per`), so a long log never sits in memory. The
    payloads and response bodies, the bulk of a row, are not read (touching one raises)."""
    yield from db.session.scalars(
        sa.select(WebhookDelivery)
        .where(*_log_conditions(account_id, mode, status, event_type, endpoint_id))
        .order_by(*LOG_ORDER)
        .options(
            sa.orm.defer(WebhookDelivery.payload, raiseload=True),
            sa.orm.defer(WebhookDelivery.last_response_body, raiseload=True),
        )
        .execution_options(yield_per=chunk_size)
    )


def _log_conditions(
    account_id: str,
    mode: KeyMode,
    status: str | None,
    event_type: str | None,
    endpoint_id: str | None,
) -> list:
    conditions = [WebhookDelivery.account_id == account_id, WebhookDelivery.mode == mode]
    if status:
        conditions.append(WebhookDelivery.status == DeliveryStatus(status))
    if event_type:
        conditions.append(WebhookDelivery.event_type == event_type)
    if endpoint_id:
        conditions.append(WebhookDelivery.endpoint_id == endpoint_id)
    return conditions


def stats(account_id: str, mode: KeyMode) -> dict:
    counts = dict(
        db.session.execute(
            sa.select(WebhookDelivery.status, sa.func.count())
            .where(WebhookDelivery.account_id == account_id, WebhookDelivery.mode == mode)
            .group_by(WebhookDelivery.status)
        ).all()
    )
    by_status = {str(status): int(counts.get(status, 0)) for status in DeliveryStatus}
    return {"total": sum(by_status.values()), **by_status}


def get_delivery(account_id: str, mode: KeyMode, delivery_id: str) -> WebhookDelivery:
    return tenancy.owned(
        WebhookDelivery,
        delivery_id,
        translatable("No such delivery."),
        account_id=account_id,
        mode=mode,
    )
