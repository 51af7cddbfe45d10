"""Webhook jobs: the relay (after every commit that recorded events), one delivery attempt,
and the periodic sweep that catches up on anything missed and sends due retries.

Each is safe to run twice or at once: the relay takes each event by a conditional UPDATE,
and an attempt runs only after its delivery was claimed under a lease.
"""

from app.extensions import WEBHOOK_QUEUE, db, get_queue
from app.services.webhooks import alerts, relay, transport
from app.services.webhooks import delivery as webhook_delivery


def relay_events() -> int:
    """Fan new events out into deliveries; their sending is enqueued when this commits."""
    relayed = 0
    while True:
        done = relay.relay_pending()
        db.session.commit()
        relayed += done
        if done == 0:
            return relayed


def deliver(delivery_id: str) -> str | None:
    """One attempt: claim, commit, POST with no transaction open, record (if still ours)."""
    delivery = webhook_delivery.claim(delivery_id)
    if delivery is None:
        db.session.commit()
        return None
    attempt_number = delivery.attempts
    outgoing = webhook_delivery.prepare(delivery)
    db.session.commit()
    attempt = transport.send(outgoing)
    delivery = webhook_delivery.record(delivery_id, attempt_number, attempt)
    db.session.commit()
    return str(delivery.status)


def alert_failing_endpoint(endpoint_id: str) -> None:
    """E-mail the owners that an endpoint keeps dead-lettering (after the commit that said so)."""
    alerts.alert_owners(endpoint_id)


def sweep_webhooks() -> int:
    """Relay events whose relay job never ran (Redis was down), then enqueue a `deliver` job
    for every due retry and every delivery whose sender died; sending happens in those jobs
    (one slow endpoint never holds up the sweep). Returns how many were enqueued."""
    relay_events()
    due = webhook_delivery.due_deliveries()
    queue = get_queue(WEBHOOK_QUEUE)
    for delivery_id in due:
        queue.enqueue(deliver, delivery_id, job_timeout=webhook_delivery.job_timeout())
    return len(due)
