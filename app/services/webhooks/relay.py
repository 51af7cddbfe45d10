"""The relay: where every delivery starts. Each new event (the transactional outbox) becomes
one delivery per subscribed ACTIVE endpoint of the same account and mode, and a past
delivery sent again becomes a new one. After the commit, the delivery engine is asked to
run (`send_due_deliveries`, which sends every due delivery in batches); a single resend is
sent by a `deliver` job of its own.

An event is taken by a conditional UPDATE, so two relays never double a delivery. A
transaction's `webhookUrl` adds its endpoint to the subscribers of its `payment.*` events.
"""

from datetime import datetime

import sqlalchemy as sa
from flask import current_app

from app.extensions import WEBHOOK_QUEUE, db
from app.formats import event_catalog
from app.formats.webhooks import envelope
from app.models import DeliveryStatus, Event, KeyMode, Transaction, WebhookDelivery, WebhookEndpoint
from app.models.base import utcnow
from app.queueing import enqueue_after_commit
from app.services.webhooks.delivery import engine_job_timeout, job_timeout
from app.services.webhooks.endpoints import active_endpoints, get_endpoint, resendability
from app.services.webhooks.log import get_delivery

DELIVER_JOB = "app.jobs.webhooks.deliver"
ENGINE_JOB = "app.jobs.webhooks.send_due_deliveries"
TRANSACTION_EVENT_PREFIX = "payment."


def relay_pending(batch_size: int = 200) -> int:
    """Turn unrelayed events into deliveries (one per subscribed ACTIVE endpoint of the same
    account and mode) and ask for each to be sent after commit; returns how many events.

    Each event is taken by a conditional UPDATE of `relayed_at`, so two relays at once (on
    any database) never both fan it out; SKIP LOCKED keeps them off each other's batch."""
    candidates = db.session.scalars(
        sa.select(Event)
        .where(Event.relayed_at.is_(None))
        .order_by(Event.created_at, Event.id)
        .limit(batch_size)
        .with_for_update(skip_locked=True)
    ).all()
    now = utcnow()
    for event in candidates:
        taken = db.session.execute(
            sa.update(Event)
            .where(Event.id == event.id, Event.relayed_at.is_(None))
            .values(relayed_at=now)
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:
            for endpoint in _subscribers(event):
                _add(_new_delivery(endpoint, event, now))
    return len(candidates)


def _add(delivery: WebhookDelivery) -> WebhookDelivery:
    """A new delivery, sent by the engine run asked for after the commit."""
    db.session.add(delivery)
    db.session.flush()
    enqueue_after_commit(db.session(), WEBHOOK_QUEUE, ENGINE_JOB, job_timeout=engine_job_timeout())
    return delivery


def resend(account_id: str, mode: KeyMode, delivery_id: str) -> WebhookDelivery:
    """Send a past delivery again as a new delivery (same event, same `evt_` id)."""
    original = get_delivery(account_id, mode, delivery_id)
    endpoint = _resendable_endpoint(account_id, mode, original.endpoint_id)
    copy = _copy_for_resend(original, endpoint, utcnow())
    db.session.add(copy)
    db.session.flush()
    enqueue_after_commit(
        db.session(), WEBHOOK_QUEUE, DELIVER_JOB, copy.id, job_timeout=job_timeout()
    )
    return copy


def recover(account_id: str, mode: KeyMode, endpoint_id: str, since: datetime) -> int:
    """Resend every dead-lettered delivery of an endpoint created at or after `since` that
    was not resent already (so a second click does not duplicate them)."""
    endpoint = _resendable_endpoint(account_id, mode, endpoint_id)
    resent = sa.orm.aliased(WebhookDelivery)
    failed = db.session.scalars(
        sa.select(WebhookDelivery).where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status == DeliveryStatus.FAILED,
            WebhookDelivery.created_at >= since,
            ~sa.exists().where(resent.resent_from_id == WebhookDelivery.id),
        )
    ).all()
    now = utcnow()
    for original in failed:
        _add(_copy_for_resend(original, endpoint, now))
    return len(failed)


def _resendable_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> WebhookEndpoint:
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    resendability(endpoint).require()
    return endpoint


def _subscribers(event: Event) -> list[WebhookEndpoint]:
    """Active endpoints subscribed to the event, plus the transaction's own endpoint
    (`webhookUrl`) for its `payment.*` events."""
    transaction = (
        db.session.get(Transaction, event.subject_id)
        if event.subject_type == "transaction"
        else None
    )
    return _listeners(event.account_id, event.mode, event.type, transaction)


def has_listener(transaction: Transaction, event_type: str) -> bool:
    """Whether an event of this type about `transaction` would reach any endpoint."""
    return bool(_listeners(transaction.account_id, transaction.mode, event_type, transaction))


def _listeners(
    account_id: str, mode: KeyMode, event_type: str, transaction: Transaction | None
) -> list[WebhookEndpoint]:
    endpoints = active_endpoints(account_id, mode)
    override = (
        transaction.webhook_url
        if transaction is not None and event_type.startswith(TRANSACTION_EVENT_PREFIX)
        else None
    )
    return [
        endpoint
        for endpoint in endpoints
        if event_type in event_catalog.expand(endpoint.events) or endpoint.url == override
    ]


def _new_delivery(endpoint: WebhookEndpoint, event: Event, now: datetime) -> WebhookDelivery:
    return WebhookDelivery(
        account_id=event.account_id,
        mode=endpoint.mode,
        endpoint_id=endpoint.id,
        event_id=event.id,
        event_type=event.type,
        payload=envelope(event),
        status=DeliveryStatus.PENDING,
        attempts=0,
        max_attempts=current_app.config["WEBHOOK_MAX_ATTEMPTS"],
        next_retry_at=now,
        created_at=now,
        updated_at=now,
    )


def _copy_for_resend(
    original: WebhookDelivery, endpoint: WebhookEndpoint, now: datetime
) -> WebhookDelivery:
    copy = _new_delivery(endpoint, db.session.get(Event, original.event_id), now)
    copy.resent_from_id = original.id
    return copy
