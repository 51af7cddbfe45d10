"""Webhook jobs: the relay (asked for by the commits that record events), the delivery engine
that sends every due delivery in batches, one delivery's attempt (a resend), and the
periodic sweep that catches up on anything missed.

Each is safe to run twice or at once: the relay takes each event by a conditional UPDATE,
and an attempt runs only after its delivery was claimed under a lease.
"""

import math
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from flask import Flask, current_app

from app.extensions import WEBHOOK_QUEUE, db, get_queue
from app.models.base import utcnow
from app.queueing import run_started
from app.services import events
from app.services.webhooks import alerts, relay, transport
from app.services.webhooks import delivery as webhook_delivery

# The engine claims again once this share of its senders is free (or none is busy): fewer,
# larger claims than one per answer.
REFILL_FRACTION = 2
# An outcome that came in is recorded within this long, even while the engine is not claiming.
RECORD_WITHIN_SECONDS = 0.1


def relay_events() -> int:
    """Fan new events out into deliveries; their sending is enqueued when this commits."""
    run_started(events.RELAY_JOB)
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


def send_due_deliveries() -> int:
    """The delivery engine: claim due deliveries in batches, send them concurrently
    (WEBHOOK_SENDERS threads, each attempt with its own lease, signature and time limit,
    over connections kept alive for the run), and record the outcomes that have come in
    and claim more for the senders that are free, one transaction for both. Outcomes are
    recorded when the engine claims again, when nothing is left in flight, or at the latest
    RECORD_WITHIN_SECONDS after the first of them came in: a turn is a few statements
    whatever its size, so fewer, larger turns leave the process's one interpreter to the
    senders. Returns how many attempts it made."""
    app = current_app._get_current_object()
    senders = app.config["WEBHOOK_SENDERS"]
    started = utcnow()
    stop_claiming_at = time.monotonic() + webhook_delivery.ENGINE_RUN_SECONDS
    in_flight: dict[Future, tuple[str, int]] = {}
    answered: list[tuple[str, int, transport.Attempt]] = []
    record_by = math.inf  # when the oldest unrecorded outcome must be recorded
    attempts = 0
    more_due = False
    claiming = True
    refill_at = max(1, senders // REFILL_FRACTION)
    with (
        transport.KeptConnections(senders) as kept,
        ThreadPoolExecutor(senders, thread_name_prefix="webhook-sender") as pool,
    ):
        while True:
            if in_flight:
                done, _ = wait(
                    in_flight,
                    timeout=None if not answered else max(0.0, record_by - time.monotonic()),
                    return_when=FIRST_COMPLETED,
                )
                if done and not answered:
                    record_by = time.monotonic() + RECORD_WITHIN_SECONDS
                answered += [(*in_flight.pop(future), future.result()) for future in done]
            free = senders - len(in_flight)
            refill = claiming and (free >= refill_at or not in_flight)
            if not (refill or not in_flight or time.monotonic() >= record_by):
                continue
            if answered:
                webhook_delivery.record_all(answered)
                attempts += len(answered)
                answered, record_by = [], math.inf
            batch = []
            if refill:
                claimed = webhook_delivery.claim_due(free, not_attempted_since=started)
                outgoing = webhook_delivery.prepare_all(claimed)
                batch = [
                    (delivery.id, delivery.attempts, request)
                    for delivery, request in zip(claimed, outgoing, strict=True)
                ]
                more_due = len(claimed) == free
                claiming = time.monotonic() < stop_claiming_at
            db.session.commit()  # the outcomes, and the new leases before their POSTs
            for delivery_id, attempt_number, request in batch:
                in_flight[pool.submit(_send_in, app, request, kept)] = (delivery_id, attempt_number)
            if not in_flight:
                break
    if more_due:
        enqueue_engine()
    return attempts


def _send_in(
    app: Flask, outgoing: transport.Outgoing, kept: transport.KeptConnections
) -> transport.Attempt:
    with app.app_context():
        return transport.send(outgoing, kept)


def enqueue_engine() -> None:
    """Ask for a run of the delivery engine now (the relay asks after its commit)."""
    get_queue(WEBHOOK_QUEUE).enqueue(
        send_due_deliveries, job_timeout=webhook_delivery.engine_job_timeout()
    )


def alert_failing_endpoint(endpoint_id: str) -> None:
    """E-mail the owners that an endpoint keeps dead-lettering (after the commit that said so)."""
    alerts.alert_owners(endpoint_id)


def sweep_webhooks() -> int:
    """Relay events whose relay job never ran (Redis was down), then ask for an engine run
    when any delivery is due (a retry, or one whose sender died); sending happens there, so
    one slow endpoint never holds up the sweep. Returns how many were due."""
    relay_events()
    due = webhook_delivery.due_deliveries()
    if due:
        enqueue_engine()
    return len(due)
