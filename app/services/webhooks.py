"""Webhooks: endpoints, the outbox relay, signed delivery with retries, and the delivery log.

- Endpoints belong to an account and a mode (a test key's endpoints get test-mode events).
  Live endpoints must be `https` and resolve to public addresses only; test endpoints may be
  `http` to any host, so merchants can test on their own machine.
- The relay turns each new event into one delivery per subscribed ACTIVE endpoint; events
  are locked with SKIP LOCKED, so two relays never double a delivery.
- A delivery is claimed with a lease (a conditional UPDATE) before it is sent: never two
  senders at once, and a sender that dies is replaced once its lease runs out.
- Retries back off exponentially with jitter (`RETRY_DELAYS`, about a day over 15 attempts);
  429 honours Retry-After. After the last attempt the delivery is FAILED (the dead-letter
  list) and can be resent; an endpoint that keeps dead-lettering is reported to the owners.
"""

import ipaddress
import random
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import requests
import sqlalchemy as sa
from flask import current_app

from app.errors import InvalidRequest, NotFound
from app.extensions import db
from app.formats.webhooks import body_bytes, envelope, signature
from app.jobs.queueing import enqueue_after_commit
from app.models import (
    DeliveryStatus,
    EndpointStatus,
    Event,
    KeyMode,
    Membership,
    Role,
    User,
    WebhookDelivery,
    WebhookEndpoint,
)
from app.models.base import utcnow
from app.services import event_catalog, mail, secrets_box

D = DeliveryStatus
DELIVER_JOB = "app.jobs.webhooks.deliver"
MAX_URL_LENGTH = 2048
MAX_RESPONSE_BODY = 2000
LEASE_MARGIN = timedelta(seconds=30)
# Wait before attempt n+1 (seconds): 0, 30 s, 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, then 3 h.
RETRY_DELAYS = (30, 60, 300, 900, 1800, 3600, 7200, 10800)
JITTER = 0.1
MAX_RETRY_AFTER = timedelta(hours=24)
USER_AGENT = "AcmePay-Webhooks/1.0"


@dataclass(frozen=True)
class Attempt:
    """What one POST produced: a status code and body, or an error before any answer."""

    status_code: int | None
    body: str | None
    error: str | None
    retry_after: timedelta | None = None


def create_endpoint(
    account_id: str, mode: KeyMode, url: str, events: list[str]
) -> tuple[WebhookEndpoint, str]:
    """A new ACTIVE endpoint and its signing secret (64 hex), shown to the caller only now."""
    secret = secrets.token_hex(32)
    endpoint = WebhookEndpoint(
        account_id=account_id,
        mode=mode,
        url=check_url(url, mode),
        events=_checked_events(events),
        status=EndpointStatus.ACTIVE,
        secret_ciphertext=secrets_box.encrypt(secret),
    )
    db.session.add(endpoint)
    db.session.flush()
    return endpoint, secret


def list_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    return list(
        db.session.scalars(
            sa.select(WebhookEndpoint)
            .where(
                WebhookEndpoint.account_id == account_id,
                WebhookEndpoint.mode == mode,
                WebhookEndpoint.deleted_at.is_(None),
            )
            .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
        )
    )


def get_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> WebhookEndpoint:
    endpoint = db.session.scalar(
        sa.select(WebhookEndpoint).where(
            WebhookEndpoint.id == endpoint_id,
            WebhookEndpoint.account_id == account_id,
            WebhookEndpoint.mode == mode,
            WebhookEndpoint.deleted_at.is_(None),
        )
    )
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def update_endpoint(
    account_id: str, mode: KeyMode, endpoint_id: str, changes: dict
) -> WebhookEndpoint:
    """Change only what is sent: url, events, status."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    if "url" in changes:
        endpoint.url = check_url(changes["url"], mode)
    if "events" in changes:
        endpoint.events = _checked_events(changes["events"])
    if "status" in changes:
        endpoint.status = EndpointStatus(changes["status"])
    endpoint.updated_at = utcnow()
    return endpoint


def rotate_secret(account_id: str, mode: KeyMode, endpoint_id: str) -> tuple[WebhookEndpoint, str]:
    """A new secret, used by every delivery from now on (no overlap window)."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    secret = secrets.token_hex(32)
    endpoint.secret_ciphertext = secrets_box.encrypt(secret)
    endpoint.updated_at = utcnow()
    return endpoint, secret


def delete_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> None:
    """Remove the endpoint; its deliveries still waiting are abandoned (CANCELLED)."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    endpoint.deleted_at = utcnow()
    endpoint.status = EndpointStatus.INACTIVE
    db.session.execute(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status.in_((D.PENDING, D.PROCESSING)),
        )
        .values(status=D.CANCELLED, next_retry_at=None, updated_at=utcnow())
    )


def check_url(url: str, mode: KeyMode) -> str:
    """Registration rules: http(s) with a host and no credentials; live mode only https to
    public addresses."""
    parts = urlsplit(url.strip())
    if len(url) > MAX_URL_LENGTH or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("url must be an http(s) address with a host.", param="url")
    if parts.username or parts.password:
        raise InvalidRequest("url must not carry credentials.", param="url")
    if mode is KeyMode.LIVE:
        if parts.scheme != "https":
            raise InvalidRequest("Live endpoints must use https.", param="url")
        problem = _private_destination(parts.hostname)
        if problem:
            raise InvalidRequest(problem, param="url")
    return url.strip()


def relay_pending(batch_size: int = 200) -> int:
    """Turn unrelayed events into deliveries (one per subscribed ACTIVE endpoint of the same
    account and mode) and ask for each to be sent after commit; returns how many events."""
    events = db.session.scalars(
        sa.select(Event)
        .where(Event.relayed_at.is_(None))
        .order_by(Event.created_at, Event.id)
        .limit(batch_size)
        .with_for_update(skip_locked=True)
    ).all()
    now = utcnow()
    for event in events:
        for endpoint in _subscribers(event):
            delivery = _new_delivery(endpoint, event, now)
            db.session.add(delivery)
            db.session.flush()
            enqueue_after_commit(db.session(), "default", DELIVER_JOB, delivery.id)
        event.relayed_at = now
    return len(events)


def claim(delivery_id: str, now: datetime | None = None) -> WebhookDelivery | None:
    """Take a due delivery for one attempt under a lease; None if it is not due or someone
    else holds it. The caller commits before sending."""
    now = now or utcnow()
    lease = timedelta(seconds=current_app.config["WEBHOOK_TIMEOUT_SECONDS"]) + LEASE_MARGIN
    claimed = db.session.execute(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            sa.or_(
                sa.and_(WebhookDelivery.status == D.PENDING, WebhookDelivery.next_retry_at <= now),
                sa.and_(
                    WebhookDelivery.status == D.PROCESSING,
                    WebhookDelivery.lease_expires_at <= now,
                ),
            ),
        )
        .values(
            status=D.PROCESSING,
            attempts=WebhookDelivery.attempts + 1,
            lease_expires_at=now + lease,
            last_attempt_at=now,
            updated_at=now,
        )
    )
    if claimed.rowcount != 1:
        return None
    return db.session.get(WebhookDelivery, delivery_id, populate_existing=True)


def send(delivery: WebhookDelivery) -> Attempt:
    """POST the delivery's payload, signed with the endpoint's current secret (no DB lock)."""
    endpoint = db.session.get(WebhookEndpoint, delivery.endpoint_id)
    if endpoint.mode is KeyMode.LIVE:
        problem = _private_destination(urlsplit(endpoint.url).hostname or "")
        if problem:
            return Attempt(status_code=None, body=None, error=problem)
    body = body_bytes(delivery.payload)
    timestamp = int(utcnow().timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Acme-Signature": signature(
            delivery.event_type, secrets_box.decrypt(endpoint.secret_ciphertext), body, timestamp
        ),
        "X-Acme-Delivery-Id": delivery.id,
        "X-Acme-Event-Type": delivery.event_type,
    }
    try:
        answer = requests.post(
            endpoint.url,
            data=body,
            headers=headers,
            timeout=current_app.config["WEBHOOK_TIMEOUT_SECONDS"],
            allow_redirects=False,
        )
    except requests.exceptions.SSLError as error:
        return Attempt(None, None, f"TLS error: {_short(error)}")
    except requests.exceptions.Timeout:
        return Attempt(None, None, "Timed out waiting for the endpoint's answer.")
    except requests.exceptions.ConnectionError as error:
        return Attempt(None, None, f"Connection failed: {_short(error)}")
    return Attempt(
        status_code=answer.status_code,
        body=answer.text[:MAX_RESPONSE_BODY],
        error=None,
        retry_after=_retry_after(answer) if answer.status_code == 429 else None,
    )


def record(delivery_id: str, attempt: Attempt, now: datetime | None = None) -> WebhookDelivery:
    """Write an attempt's outcome: delivered, rescheduled, or dead-lettered after the last."""
    now = now or utcnow()
    delivery = db.session.scalar(
        sa.select(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if delivery.status is not D.PROCESSING:  # cancelled meanwhile (endpoint deleted)
        return delivery
    endpoint = db.session.get(WebhookEndpoint, delivery.endpoint_id)
    delivery.last_status_code = attempt.status_code
    delivery.last_response_body = attempt.body
    delivery.last_error = attempt.error or _http_error(attempt.status_code)
    delivery.lease_expires_at = None
    delivery.updated_at = now
    if attempt.status_code is not None and 200 <= attempt.status_code < 300:
        delivery.status = D.DELIVERED
        delivery.delivered_at = now
        delivery.next_retry_at = None
        endpoint.consecutive_dead_letters = 0
    elif delivery.attempts >= delivery.max_attempts:
        delivery.status = D.FAILED
        delivery.next_retry_at = None
        _count_dead_letter(endpoint)
    else:
        delivery.status = D.PENDING
        delivery.next_retry_at = now + (attempt.retry_after or retry_delay(delivery.attempts))
    return delivery


def retry_delay(attempts_made: int) -> timedelta:
    """Exponential backoff with ±10 % jitter, so endpoints coming back are not stampeded."""
    base = RETRY_DELAYS[min(attempts_made, len(RETRY_DELAYS)) - 1]
    return timedelta(seconds=base * random.uniform(1 - JITTER, 1 + JITTER))  # noqa: S311


def due_deliveries(now: datetime | None = None, limit: int = 500) -> list[str]:
    """Deliveries whose retry is due, or whose sender's lease ran out (it died mid-send)."""
    now = now or utcnow()
    return db.session.scalars(
        sa.select(WebhookDelivery.id)
        .where(
            sa.or_(
                sa.and_(WebhookDelivery.status == D.PENDING, WebhookDelivery.next_retry_at <= now),
                sa.and_(
                    WebhookDelivery.status == D.PROCESSING,
                    WebhookDelivery.lease_expires_at <= now,
                ),
            )
        )
        .order_by(WebhookDelivery.next_retry_at)
        .limit(limit)
    ).all()


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
    conditions = [WebhookDelivery.account_id == account_id, WebhookDelivery.mode == mode]
    if status:
        conditions.append(WebhookDelivery.status == DeliveryStatus(status))
    if event_type:
        conditions.append(WebhookDelivery.event_type == event_type)
    if endpoint_id:
        conditions.append(WebhookDelivery.endpoint_id == endpoint_id)
    total = db.session.scalar(
        sa.select(sa.func.count()).select_from(WebhookDelivery).where(*conditions)
    )
    rows = db.session.scalars(
        sa.select(WebhookDelivery)
        .where(*conditions)
        .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
        .offset(offset)
        .limit(limit)
    ).all()
    return list(rows), total


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
    delivery = db.session.scalar(
        sa.select(WebhookDelivery).where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.account_id == account_id,
            WebhookDelivery.mode == mode,
        )
    )
    if delivery is None:
        raise NotFound("No such delivery.")
    return delivery


def resend(account_id: str, mode: KeyMode, delivery_id: str) -> WebhookDelivery:
    """Send a past delivery again as a new delivery (same event, same `evt_` id)."""
    original = get_delivery(account_id, mode, delivery_id)
    endpoint = get_endpoint(account_id, mode, original.endpoint_id)
    copy = _copy_for_resend(original, endpoint, utcnow())
    db.session.add(copy)
    db.session.flush()
    enqueue_after_commit(db.session(), "default", DELIVER_JOB, copy.id)
    return copy


def recover(account_id: str, mode: KeyMode, endpoint_id: str, since: datetime) -> int:
    """Resend every dead-lettered delivery of an endpoint created at or after `since`."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    failed = db.session.scalars(
        sa.select(WebhookDelivery).where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status == D.FAILED,
            WebhookDelivery.created_at >= since,
        )
    ).all()
    now = utcnow()
    for original in failed:
        copy = _copy_for_resend(original, endpoint, now)
        db.session.add(copy)
        db.session.flush()
        enqueue_after_commit(db.session(), "default", DELIVER_JOB, copy.id)
    return len(failed)


def reencrypt_secrets() -> int:
    """Re-encrypt every endpoint secret under the newest key (after adding one in front of
    SECRETS_ENCRYPTION_KEYS); then the old key can be removed. Returns how many."""
    endpoints = db.session.scalars(sa.select(WebhookEndpoint)).all()
    for endpoint in endpoints:
        endpoint.secret_ciphertext = secrets_box.rotate(endpoint.secret_ciphertext)
    return len(endpoints)


def failing_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    """Endpoints whose recent deliveries keep dead-lettering (shown on the dashboard)."""
    threshold = current_app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]
    return [e for e in list_endpoints(account_id, mode) if e.consecutive_dead_letters >= threshold]


def _subscribers(event: Event) -> list[WebhookEndpoint]:
    endpoints = db.session.scalars(
        sa.select(WebhookEndpoint).where(
            WebhookEndpoint.account_id == event.account_id,
            WebhookEndpoint.mode == event.mode,
            WebhookEndpoint.status == EndpointStatus.ACTIVE,
            WebhookEndpoint.deleted_at.is_(None),
        )
    )
    return [e for e in endpoints if event.type in event_catalog.expand(e.events)]


def _new_delivery(endpoint: WebhookEndpoint, event: Event, now: datetime) -> WebhookDelivery:
    return WebhookDelivery(
        account_id=event.account_id,
        mode=endpoint.mode,
        endpoint_id=endpoint.id,
        event_id=event.id,
        event_type=event.type,
        payload=envelope(event),
        status=D.PENDING,
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


def _checked_events(events: list[str]) -> list[str]:
    if not events:
        raise InvalidRequest("events lists at least one event name.", param="events")
    unknown = event_catalog.unknown(events)
    if unknown:
        raise InvalidRequest(
            "Unknown event names: " + ", ".join(unknown) + " (see /v1/webhooks/event-catalog).",
            param="events",
        )
    return list(dict.fromkeys(events))


def _private_destination(host: str) -> str | None:
    """Why a live endpoint's host may not be called (resolves to a non-public address), or
    None. Checked at registration and again before every live delivery."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return f"The host {host} cannot be resolved."
    for address in addresses:
        if not ipaddress.ip_address(address.split("%")[0]).is_global:
            return f"The host {host} resolves to a private address ({address})."
    return None


def _retry_after(answer: requests.Response) -> timedelta | None:
    value = answer.headers.get("Retry-After", "").strip()
    if value.isdigit():
        return min(timedelta(seconds=int(value)), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when - utcnow(), timedelta(0)), MAX_RETRY_AFTER)


def _http_error(status_code: int | None) -> str | None:
    if status_code is None or 200 <= status_code < 300:
        return None
    return f"The endpoint answered HTTP {status_code}."


def _short(error: Exception) -> str:
    return str(error)[:300]


def _count_dead_letter(endpoint: WebhookEndpoint) -> None:
    """Tell the account's owners once, when an endpoint reaches the alert threshold."""
    endpoint.consecutive_dead_letters += 1
    if endpoint.consecutive_dead_letters != current_app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]:
        return
    owners = db.session.scalars(
        sa.select(User.email)
        .join(Membership, Membership.user_id == User.id)
        .where(
            Membership.account_id == endpoint.account_id,
            Membership.active.is_(True),
            Membership.role.in_((Role.OWNER, Role.ADMIN)),
        )
    ).all()
    mail.send(
        list(owners),
        "Acme Pay: a webhook endpoint keeps failing",
        f"Deliveries to {endpoint.url} have failed {endpoint.consecutive_dead_letters} times in "
        "a row after every retry. The endpoint is still ACTIVE. Check it, then resend the "
        "failed deliveries from the dashboard or with POST "
        f"/v1/webhooks/endpoints/{endpoint.id}/recover.",
    )
