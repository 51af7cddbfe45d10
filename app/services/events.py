"""Recording domain events in the caller's transaction (the transactional outbox).

An event row commits or rolls back with the change it describes, so no event is ever sent
for a change that did not happen, and none is lost for a change that did. Delivery reads
these rows later (the webhook relay, `app/services/webhooks/relay.py`).
"""

import uuid

from app.extensions import WEBHOOK_QUEUE, db
from app.models import Event, KeyMode
from app.queueing import enqueue_once_after_commit

API_VERSION = "2026-11-01"
RELAY_JOB = "app.jobs.webhooks.relay_events"


def record_event(
    account_id: str,
    mode: KeyMode,
    event_type: str,
    data: dict,
    *,
    subject_type: str | None = None,
    subject_id: str | None = None,
) -> Event:
    """Add an event to the current transaction; its `evt_` id is stable from here on. The
    webhook relay is asked to run once the transaction commits, unless a run already queued
    has not started (and a sweep runs anyway)."""
    event = Event(
        id=f"evt_{uuid.uuid4().hex}",
        account_id=account_id,
        mode=mode,
        type=event_type,
        api_version=API_VERSION,
        subject_type=subject_type,
        subject_id=subject_id,
        data=data,
    )
    db.session.add(event)
    enqueue_once_after_commit(db.session(), WEBHOOK_QUEUE, RELAY_JOB)
    return event
