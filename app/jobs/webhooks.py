"""Webhook jobs: the relay (after every commit that recorded events), one delivery attempt,
and the periodic sweep that catches up on anything missed and sends due retries.

Each is safe to run twice or at once: the relay locks events with SKIP LOCKED, and an
attempt runs only after its delivery was claimed under a lease.
"""

import logging

from app.extensions import db
from app.services import webhooks

log = logging.getLogger(__name__)


def relay_events() -> int:
    """Fan new events out into deliveries; their sending is enqueued when this commits."""
    relayed = 0
    while True:
        done = webhooks.relay_pending()
        db.session.commit()
        relayed += done
        if done == 0:
            return relayed


def deliver(delivery_id: str) -> str | None:
    """One attempt: claim, send (no lock held while waiting on the endpoint), record."""
    delivery = webhooks.claim(delivery_id)
    db.session.commit()
    if delivery is None:
        return None
    attempt = webhooks.send(delivery)
    delivery = webhooks.record(delivery_id, attempt)
    db.session.commit()
    return str(delivery.status)


def sweep_webhooks() -> int:
    """Relay events whose relay job never ran (Redis was down), then send every due retry
    and every delivery whose sender died; one bad delivery never stops the others."""
    relay_events()
    due = webhooks.due_deliveries()
    for delivery_id in due:
        try:
            deliver(delivery_id)
        except Exception:
            db.session.rollback()
            log.exception("webhook delivery failed; retried later", extra={"id": delivery_id})
    return len(due)
