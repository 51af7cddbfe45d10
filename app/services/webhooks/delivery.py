"""One delivery attempt's life in the database: claimed under a lease, signed, recorded.

A delivery is claimed with a lease (a conditional UPDATE) before it is sent, and only that
attempt's claimant may record its outcome; a sender that dies is replaced once its lease
(twice the timeout) runs out, and a late answer from it is dropped. An endpoint has at most
WEBHOOK_ENDPOINT_CONCURRENCY attempts under way. Retries back off exponentially with jitter
(`RETRY_DELAYS`, about a day over 15 attempts); 429 honours Retry-After. After the last
attempt the delivery is FAILED (the dead-letter list). The POST itself is `transport.send`.
"""

from datetime import datetime, timedelta
from functools import cache

import sqlalchemy as sa
from flask import current_app

from app.extensions import db
from app.formats.webhooks import body_bytes, signature
from app.models import DeliveryStatus, EndpointStatus, Event, WebhookDelivery, WebhookEndpoint
from app.models.base import utcnow
from app.retries import jittered
from app.services import secrets_box
from app.services.state_machine import StateMachine
from app.services.webhooks import alerts
from app.services.webhooks.transport import INACTIVE_ERROR, Attempt, Outgoing

D = DeliveryStatus
USER_AGENT = "AcmePay-Webhooks/1.0"
LEASE_MARGIN = timedelta(seconds=30)
# A due delivery whose endpoint already has WEBHOOK_ENDPOINT_CONCURRENCY attempts under way
# waits this long, PENDING; the next webhook sweep sends it.
ENDPOINT_BUSY_WAIT = timedelta(seconds=5)
# A batch claim looks at this many due deliveries per place it fills, so deliveries to full
# endpoints ahead in the line do not leave the batch empty.
CANDIDATES_PER_PLACE = 4
# The delivery engine (`jobs.webhooks.send_due_deliveries`) stops taking new deliveries
# after this long, finishes what it sent, and asks for another run if there was more.
ENGINE_RUN_SECONDS = 60
# Wait before attempt n+1 (seconds): 0, 30 s, 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, then 3 h.
RETRY_DELAYS = (30, 60, 300, 900, 1800, 3600, 7200, 10800)
JITTER = 0.1
# Every attempt's outcome leaves PROCESSING: back to PENDING for a retry, or final. Two moves
# are conditional UPDATEs, atomic between workers: `claim` (PENDING -> PROCESSING, and again
# PROCESSING -> PROCESSING once a dead claimant's lease ran out) and `delete_endpoint` (the
# waiting ones -> CANCELLED). `record_all` checks each outcome against the table and writes
# a batch's outcomes in one UPDATE, under the rows' locks. A resend is a new delivery, so a
# final status stays final.
DELIVERY_MACHINE = StateMachine(
    "webhook delivery",
    {
        D.PENDING: frozenset({D.PROCESSING, D.CANCELLED}),
        D.PROCESSING: frozenset({D.PROCESSING, D.PENDING, D.DELIVERED, D.FAILED, D.CANCELLED}),
    },
)


def claim(delivery_id: str, now: datetime | None = None) -> WebhookDelivery | None:
    """Take a due delivery for one attempt under a lease; None if it is not due, someone
    else holds it, or its endpoint already has WEBHOOK_ENDPOINT_CONCURRENCY attempts under
    way (then it waits ENDPOINT_BUSY_WAIT, still PENDING, so one slow endpoint cannot hold
    every webhook worker). A delivery whose claimant died after its last allowed attempt is
    dead-lettered instead of being sent again. The caller commits before sending.

    The endpoint's row lock serialises its claims on PostgreSQL (SQLite serialises every
    write), and the count of attempts under way is part of the claiming UPDATE, so two
    workers never both take the last free place."""
    now = now or utcnow()
    endpoint_id = db.session.scalar(
        sa.select(WebhookDelivery.endpoint_id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id == delivery_id, _is_due(now))
        .with_for_update(of=WebhookEndpoint)
    )
    if endpoint_id is None:
        return None
    claimed = db.session.execute(
        sa.update(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id, _is_due(now), _has_room(endpoint_id, now))
        .values(_one_more_attempt(now, now + _lease()))
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        _wait_for_room(delivery_id, now)
        return None
    delivery = db.session.get(WebhookDelivery, delivery_id, populate_existing=True)
    return None if _dead_lettered_if_spent(delivery) else delivery


def claim_due(
    limit: int, not_attempted_since: datetime, now: datetime | None = None
) -> list[WebhookDelivery]:
    """Take up to `limit` due deliveries at once, oldest due first (then oldest event first:
    one relay batch makes its deliveries due at the same instant), each for one attempt
    under a lease as `claim` does (the caller commits before sending); none attempted since
    `not_attempted_since` (an engine run retries nothing it sent itself: a retry due at once,
    `Retry-After: 0`, waits for the next run).

    Each endpoint puts forward at most WEBHOOK_ENDPOINT_CONCURRENCY of its oldest, so one
    endpoint's backlog never fills the batch, and gets at most its room: a delivery to a
    full endpoint stays due for the next claim, which comes as soon as a sender is free. The
    endpoints' rows are locked with SKIP LOCKED: two batch claimers never wait on each
    other, they take deliveries to other endpoints."""
    now = now or utcnow()
    candidates = db.session.execute(
        _due_candidates(),
        {
            "now": now,
            "not_attempted_since": not_attempted_since,
            "allowed": current_app.config["WEBHOOK_ENDPOINT_CONCURRENCY"],
            "candidates": limit * CANDIDATES_PER_PLACE,
        },
    ).all()
    endpoint_ids = sorted({candidate.endpoint_id for candidate in candidates})
    locked = db.session.scalars(_LOCK_ENDPOINTS, {"endpoint_ids": endpoint_ids}).all()
    room = _room_per_endpoint(set(locked), now)
    chosen: list[str] = []
    for candidate in candidates:
        if len(chosen) < limit and room.get(candidate.endpoint_id, 0) > 0:
            room[candidate.endpoint_id] -= 1
            chosen.append(candidate.id)
    if not chosen:
        return []
    claimed_ids = db.session.scalars(
        _claim_chosen(), {"chosen": chosen, "now": now, "new_lease": now + _lease()}
    ).all()
    claimed = db.session.scalars(_READ_CLAIMED, {"claimed": claimed_ids}).all()
    return [delivery for delivery in claimed if not _dead_lettered_if_spent(delivery)]


@cache
def _due_candidates() -> sa.Select:
    """Due deliveries, oldest first, each endpoint's first `allowed` only: `claim_due`'s
    candidates. Built once with its values as parameters (it is the engine's largest
    statement, and the engine claims many times a second)."""
    oldest_first = (WebhookDelivery.next_retry_at, Event.created_at, WebhookDelivery.id)
    ranked = (
        sa.select(
            WebhookDelivery.id,
            WebhookDelivery.endpoint_id,
            WebhookDelivery.next_retry_at,
            Event.created_at.label("event_created_at"),
            sa.func.row_number()
            .over(partition_by=WebhookDelivery.endpoint_id, order_by=oldest_first)
            .label("place"),
        )
        .join(Event, Event.id == WebhookDelivery.event_id)
        .where(
            _is_due(sa.bindparam("now")),
            sa.or_(
                WebhookDelivery.last_attempt_at.is_(None),
                WebhookDelivery.last_attempt_at < sa.bindparam("not_attempted_since"),
            ),
        )
        .subquery()
    )
    return (
        sa.select(ranked.c.id, ranked.c.endpoint_id)
        .where(ranked.c.place <= sa.bindparam("allowed", type_=sa.Integer))
        .order_by(ranked.c.next_retry_at, ranked.c.event_created_at, ranked.c.id)
        .limit(sa.bindparam("candidates", type_=sa.Integer))
    )


@cache
def _claim_chosen() -> sa.Update:
    """`claim_due`'s claiming UPDATE of the chosen deliveries still due, built once."""
    return (
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.id.in_(sa.bindparam("chosen", expanding=True)),
            _is_due(sa.bindparam("now")),
        )
        .values(_one_more_attempt(sa.bindparam("now"), sa.bindparam("new_lease")))
        .returning(WebhookDelivery.id)
        .execution_options(synchronize_session=False)
    )


# The claimed deliveries, read whole (the session may hold them from an earlier turn).
_READ_CLAIMED = (
    sa.select(WebhookDelivery)
    .where(WebhookDelivery.id.in_(sa.bindparam("claimed", expanding=True)))
    .execution_options(populate_existing=True)
)


# The candidates' endpoints that no other claimer holds, locked until commit.
_LOCK_ENDPOINTS = (
    sa.select(WebhookEndpoint.id)
    .where(WebhookEndpoint.id.in_(sa.bindparam("endpoint_ids", expanding=True)))
    .order_by(WebhookEndpoint.id)
    .with_for_update(skip_locked=True)
)


def _one_more_attempt(now, lease_expires_at) -> dict:
    """What claiming a delivery writes: PROCESSING, one more attempt, under a new lease
    (`now` and `lease_expires_at` are datetimes, or parameters of a statement built once)."""
    return {
        "status": D.PROCESSING,
        "attempts": WebhookDelivery.attempts + 1,
        "lease_expires_at": lease_expires_at,
        "last_attempt_at": now,
        "updated_at": now,
    }


def _room_per_endpoint(endpoint_ids: set[str], now: datetime) -> dict[str, int]:
    """How many more attempts each endpoint may have under way now."""
    if not endpoint_ids:
        return {}
    under_way = dict(
        db.session.execute(
            _attempts_under_way(), {"endpoint_ids": sorted(endpoint_ids), "now": now}
        ).all()
    )
    allowed = current_app.config["WEBHOOK_ENDPOINT_CONCURRENCY"]
    return {endpoint_id: allowed - under_way.get(endpoint_id, 0) for endpoint_id in endpoint_ids}


@cache
def _attempts_under_way() -> sa.Select:
    """How many attempts each of the given endpoints has under way, built once."""
    return (
        sa.select(WebhookDelivery.endpoint_id, sa.func.count())
        .where(
            WebhookDelivery.endpoint_id.in_(sa.bindparam("endpoint_ids", expanding=True)),
            _under_way(WebhookDelivery, sa.bindparam("now")),
        )
        .group_by(WebhookDelivery.endpoint_id)
    )


def _wait_for_room(delivery_id: str, now: datetime) -> None:
    """A due delivery whose endpoint had no room stays PENDING, ENDPOINT_BUSY_WAIT later: not
    an attempt; the sweep takes it."""
    db.session.execute(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.status == D.PENDING,
            WebhookDelivery.next_retry_at <= now,
        )
        .values(next_retry_at=now + ENDPOINT_BUSY_WAIT, updated_at=now)
        .execution_options(synchronize_session=False)
    )


def _dead_lettered_if_spent(delivery: WebhookDelivery) -> bool:
    """A delivery claimed again after its claimant died during its last allowed attempt is
    dead-lettered instead of being sent again."""
    if delivery.attempts <= delivery.max_attempts:
        return False
    delivery.attempts = delivery.max_attempts
    delivery.last_error = "Its last attempt never finished (the worker stopped)."
    _dead_letter(delivery)
    return True


def _is_due(now: datetime):
    """PENDING and due, or PROCESSING with its claimant's lease run out (it died)."""
    return sa.or_(
        sa.and_(WebhookDelivery.status == D.PENDING, WebhookDelivery.next_retry_at <= now),
        sa.and_(WebhookDelivery.status == D.PROCESSING, WebhookDelivery.lease_expires_at <= now),
    )


def _has_room(endpoint_id: str, now: datetime):
    """Fewer than WEBHOOK_ENDPOINT_CONCURRENCY attempts to the endpoint under a live lease."""
    sending = sa.orm.aliased(WebhookDelivery)
    under_way = (
        sa.select(sa.func.count())
        .select_from(sending)
        .where(sending.endpoint_id == endpoint_id, _under_way(sending, now))
        .scalar_subquery()
    )
    return under_way < current_app.config["WEBHOOK_ENDPOINT_CONCURRENCY"]


def _under_way(delivery, now: datetime):
    """An attempt being sent: PROCESSING under a live lease (`delivery`: the model or an alias)."""
    return sa.and_(delivery.status == D.PROCESSING, delivery.lease_expires_at > now)


def job_timeout() -> int:
    """RQ's limit for one `deliver` job: the lease, so RQ never kills a sender early."""
    return int(_lease().total_seconds())


def engine_job_timeout() -> int:
    """RQ's limit for a run of the delivery engine: its claiming window, then the last
    attempts' leases."""
    return ENGINE_RUN_SECONDS + job_timeout()


def _lease() -> timedelta:
    """Long enough for the longest attempt the timeout allows, twice over."""
    return 2 * timedelta(seconds=current_app.config["WEBHOOK_TIMEOUT_SECONDS"]) + LEASE_MARGIN


def prepare(delivery: WebhookDelivery) -> Outgoing:
    """The request for this attempt, signed now with the endpoint's current secret."""
    return prepare_all([delivery])[0]


def prepare_all(deliveries: list[WebhookDelivery]) -> list[Outgoing]:
    """`prepare` for a batch: their endpoints read in one statement, each secret decrypted
    once."""
    if not deliveries:
        return []
    endpoints = {
        endpoint.id: endpoint
        for endpoint in db.session.scalars(
            sa.select(WebhookEndpoint).where(
                WebhookEndpoint.id.in_({delivery.endpoint_id for delivery in deliveries})
            )
        )
    }
    secrets = {
        endpoint.id: secrets_box.decrypt(endpoint.secret_ciphertext)
        for endpoint in endpoints.values()
    }
    timestamp = int(utcnow().timestamp())
    return [
        _outgoing(
            delivery, endpoints[delivery.endpoint_id], secrets[delivery.endpoint_id], timestamp
        )
        for delivery in deliveries
    ]


def _outgoing(
    delivery: WebhookDelivery, endpoint: WebhookEndpoint, secret: str, timestamp: int
) -> Outgoing:
    body = body_bytes(delivery.payload)
    return Outgoing(
        url=endpoint.url,
        mode=endpoint.mode,
        active=endpoint.status is EndpointStatus.ACTIVE and endpoint.deleted_at is None,
        body=body,
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Acme-Signature": signature(delivery.event_type, secret, body, timestamp),
            "X-Acme-Delivery-Id": delivery.id,
            "X-Acme-Event-Type": delivery.event_type,
        },
    )


def record(
    delivery_id: str, attempt_number: int, attempt: Attempt, now: datetime | None = None
) -> WebhookDelivery:
    """Write an attempt's outcome: delivered, rescheduled, or dead-lettered after the last.
    Only the claimant of that attempt may: a late answer from a replaced sender is dropped."""
    record_all([(delivery_id, attempt_number, attempt)], now)
    return db.session.get(WebhookDelivery, delivery_id, populate_existing=True)


def record_all(outcomes: list[tuple[str, int, Attempt]], now: datetime | None = None) -> None:
    """`record` for several attempts at once, in three statements whatever their number:
    their deliveries locked and read (in id order, as every batch takes them), every outcome
    written by the same rules (`_outcome`) in one batch, and the endpoints that got a
    delivery through, if they had a run of dead letters, cleared of it. Dead letters are
    counted first, so within one batch a delivery that got through ends its endpoint's run
    whatever order the answers came in."""
    now = now or utcnow()
    locked = {
        row.id: row
        for row in db.session.execute(
            sa.select(
                WebhookDelivery.id,
                WebhookDelivery.status,
                WebhookDelivery.attempts,
                WebhookDelivery.max_attempts,
                WebhookDelivery.endpoint_id,
                WebhookEndpoint.consecutive_dead_letters,
            )
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .where(WebhookDelivery.id.in_(sorted(delivery_id for delivery_id, _, _ in outcomes)))
            .order_by(WebhookDelivery.id)
            .with_for_update(of=WebhookDelivery)
        )
    }
    ours = [
        (locked[delivery_id], attempt)
        for delivery_id, attempt_number, attempt in outcomes
        if locked[delivery_id].status is D.PROCESSING  # not cancelled meanwhile
        and locked[delivery_id].attempts == attempt_number  # nor claimed again since
    ]
    if not ours:
        return
    written = [(row, _outcome(row, attempt, now)) for row, attempt in ours]
    db.session.execute(_WRITE_OUTCOME, [values for _, values in written])
    for row, values in written:
        if values["status"] is D.FAILED:
            alerts.count_dead_letter(row.endpoint_id)
    alerts.clear_dead_letters(
        {
            row.endpoint_id
            for row, values in written
            if values["status"] is D.DELIVERED and row.consecutive_dead_letters > 0
        }
    )


# One UPDATE by id, executed for a batch of outcomes (every `_outcome` has the same keys, the
# columns it sets and `delivery_id`): a plain table statement built once, which costs the
# engine's thread a fraction of the ORM's bulk update by primary key (that was a fifth of its
# time at a few hundred deliveries a second).
_WRITE_OUTCOME = sa.update(WebhookDelivery.__table__).where(
    WebhookDelivery.__table__.c.id == sa.bindparam("delivery_id")
)


def _outcome(delivery: sa.Row, attempt: Attempt, now: datetime) -> dict:
    """What an attempt's outcome writes to its delivery (PROCESSING, ours): delivered,
    cancelled (its endpoint went away), dead-lettered after the last attempt, or due
    again after the backoff (or the endpoint's Retry-After)."""
    values = {
        "delivery_id": delivery.id,
        "last_status_code": attempt.status_code,
        "last_response_body": attempt.body,
        "last_error": attempt.error or _http_error(attempt.status_code),
        "lease_expires_at": None,
        "updated_at": now,
        "delivered_at": None,
        "next_retry_at": None,
    }
    if attempt.error == INACTIVE_ERROR:
        status = D.CANCELLED
    elif attempt.status_code is not None and 200 <= attempt.status_code < 300:
        status = D.DELIVERED
        values["delivered_at"] = now
    elif delivery.attempts >= delivery.max_attempts:
        status = D.FAILED
    else:
        status = D.PENDING
        wait = attempt.retry_after
        values["next_retry_at"] = now + (
            wait if wait is not None else retry_delay(delivery.attempts)
        )
    DELIVERY_MACHINE.check(delivery.status, status)
    return {**values, "status": status}


def _dead_letter(delivery: WebhookDelivery) -> None:
    """FAILED for good; the endpoint's count of consecutive dead letters goes up atomically,
    and the owners are told (after commit) when it reaches the alert threshold."""
    DELIVERY_MACHINE.move(delivery, D.FAILED)
    delivery.next_retry_at = None
    delivery.lease_expires_at = None
    alerts.count_dead_letter(delivery.endpoint_id)


def retry_delay(attempts_made: int) -> timedelta:
    """Exponential backoff with ±10 % jitter, so endpoints coming back are not stampeded."""
    base = RETRY_DELAYS[min(attempts_made, len(RETRY_DELAYS)) - 1]
    return jittered(timedelta(seconds=base), JITTER)


def due_deliveries(now: datetime | None = None, limit: int = 500) -> list[str]:
    """Deliveries whose retry is due, or whose sender's lease ran out (it died mid-send)."""
    now = now or utcnow()
    return db.session.scalars(
        sa.select(WebhookDelivery.id)
        .where(_is_due(now))
        .order_by(WebhookDelivery.next_retry_at)
        .limit(limit)
    ).all()


def _http_error(status_code: int | None) -> str | None:
    if status_code is None or 200 <= status_code < 300:
        return None
    return f"The endpoint answered HTTP {status_code}."
