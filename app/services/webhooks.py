"""Webhooks: endpoints, the outbox relay, signed delivery with retries, and the delivery log.

- Endpoints belong to an account and a mode (a test key's endpoints get test-mode events).
  Live endpoints must be `https`; every endpoint must resolve to public addresses only,
  except test endpoints where WEBHOOK_ALLOW_PRIVATE_TEST_URLS is on (development). Each
  attempt resolves the host once, checks every address, and connects to a checked one.
- The relay turns each new event into one delivery per subscribed ACTIVE endpoint; each event
  is taken by a conditional UPDATE, so two relays never double a delivery.
- A delivery is claimed with a lease (a conditional UPDATE) before it is sent, and only that
  attempt's claimant may record its outcome; a sender that dies is replaced once its lease
  (twice the timeout) runs out, and a late answer from it is dropped.
- Retries back off exponentially with jitter (`RETRY_DELAYS`, about a day over 15 attempts);
  429 honours Retry-After. After the last attempt the delivery is FAILED (the dead-letter
  list) and can be resent; an endpoint that keeps dead-lettering is reported to the owners.
"""

import contextlib
import functools
import ipaddress
import secrets
import socket
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import unquote, urlsplit, urlunsplit

import requests
import sqlalchemy as sa
import urllib3
from flask import current_app
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

from app.errors import Conflict, InvalidRequest, NotFound
from app.extensions import WEBHOOK_QUEUE, db
from app.formats.webhooks import body_bytes, envelope, signature
from app.jobs.queueing import enqueue_after_commit
from app.models import (
    DeliveryStatus,
    EndpointStatus,
    Event,
    KeyMode,
    Transaction,
    WebhookDelivery,
    WebhookEndpoint,
)
from app.models.base import utcnow
from app.retries import jittered, retry_after
from app.services import accounts, event_catalog, mail, secrets_box
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.state_machine import StateMachine

D = DeliveryStatus
DELIVER_JOB = "app.jobs.webhooks.deliver"
ALERT_JOB = "app.jobs.webhooks.alert_failing_endpoint"
INACTIVE_ERROR = "The endpoint is inactive or deleted; the delivery was abandoned."
# IPv6 ranges that embed an IPv4 address (NAT64, 6to4, IPv4-compatible): never a destination.
EMBEDDED_IPV4 = tuple(
    ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "::/96")
)
# IPv6 global unicast; IANA has allocated no public address outside it.
IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
MAX_URL_LENGTH = 2048
MAX_RESPONSE_BODY = 2000
LEASE_MARGIN = timedelta(seconds=30)
# A due delivery whose endpoint already has WEBHOOK_ENDPOINT_CONCURRENCY attempts under way
# waits this long, PENDING; the next webhook sweep sends it.
ENDPOINT_BUSY_WAIT = timedelta(seconds=5)
TIMED_OUT_ERROR = "Timed out: the endpoint took longer than {seconds} s in all."
# Wait before attempt n+1 (seconds): 0, 30 s, 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, then 3 h.
RETRY_DELAYS = (30, 60, 300, 900, 1800, 3600, 7200, 10800)
JITTER = 0.1
MAX_RETRY_AFTER = timedelta(hours=24)
USER_AGENT = "AcmePay-Webhooks/1.0"
TRANSACTION_EVENT_PREFIX = "payment."
LOG_ORDER = (WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())  # newest first
# Every attempt's outcome leaves PROCESSING: back to PENDING for a retry, or final. Two moves
# are conditional UPDATEs, atomic between workers: `claim` (PENDING -> PROCESSING, and again
# PROCESSING -> PROCESSING once a dead claimant's lease ran out) and `delete_endpoint` (the
# waiting ones -> CANCELLED). A resend is a new delivery, so a final status stays final.
DELIVERY_MACHINE = StateMachine(
    "webhook delivery",
    {
        D.PENDING: frozenset({D.PROCESSING, D.CANCELLED}),
        D.PROCESSING: frozenset({D.PROCESSING, D.PENDING, D.DELIVERED, D.FAILED, D.CANCELLED}),
    },
)
# The owner switches an endpoint on and off at will; deleting it also switches it off.
ENDPOINT_MACHINE = StateMachine(
    "webhook endpoint", {status: frozenset(EndpointStatus) for status in EndpointStatus}
)


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
        ENDPOINT_MACHINE.move(endpoint, EndpointStatus(changes["status"]))
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
    ENDPOINT_MACHINE.move(endpoint, EndpointStatus.INACTIVE)
    db.session.execute(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status.in_((D.PENDING, D.PROCESSING)),
        )
        .values(status=D.CANCELLED, next_retry_at=None, updated_at=utcnow())
    )


def check_url(url: str, mode: KeyMode) -> str:
    """Registration rules: http(s) with a host and no credentials; no blank or control
    character anywhere, nor percent-encoded in the host; live mode only https; the host must
    pass `destination_problem`.

    Blanks are refused, not trimmed: `urlsplit` silently drops tabs and line breaks, so the
    host checked here would not be the URL stored and sent."""
    if _has_blank_or_control(url):
        raise InvalidRequest(
            "url may not contain spaces, tabs, line breaks or other control characters.",
            param="url",
        )
    try:
        parts = urlsplit(url)
    except ValueError as error:  # a bracketed host that is no IPv6 address, such as [zz]
        raise InvalidRequest("url must be an http(s) address with a host.", param="url") from error
    if _has_blank_or_control(unquote(parts.netloc)):
        raise InvalidRequest(
            "url's host may not encode spaces, tabs, line breaks or other control characters.",
            param="url",
        )
    if len(url) > MAX_URL_LENGTH or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("url must be an http(s) address with a host.", param="url")
    if parts.username or parts.password:
        raise InvalidRequest("url must not carry credentials.", param="url")
    try:
        port = parts.port  # ValueError for a port out of range or not a number
    except ValueError:
        port = 0
    if port == 0:
        raise InvalidRequest("url has an invalid port.", param="url")
    if mode is KeyMode.LIVE and parts.scheme != "https":
        raise InvalidRequest("Live endpoints must use https.", param="url")
    problem = destination_problem(parts.hostname, mode)
    if problem:
        raise InvalidRequest(problem, param="url")
    return url


def _has_blank_or_control(text: str) -> bool:
    return any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text)


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
                _queue(_new_delivery(endpoint, event, now))
    return len(candidates)


def _queue(delivery: WebhookDelivery) -> WebhookDelivery:
    db.session.add(delivery)
    db.session.flush()
    enqueue_after_commit(
        db.session(), WEBHOOK_QUEUE, DELIVER_JOB, delivery.id, job_timeout=job_timeout()
    )
    return delivery


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
        .values(
            status=D.PROCESSING,
            attempts=WebhookDelivery.attempts + 1,
            lease_expires_at=now + _lease(),
            last_attempt_at=now,
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        # Still PENDING and due: its endpoint had no room. Not an attempt; the sweep retries.
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
        return None
    delivery = db.session.get(WebhookDelivery, delivery_id, populate_existing=True)
    if delivery.attempts > delivery.max_attempts:
        delivery.attempts = delivery.max_attempts
        delivery.last_error = "Its last attempt never finished (the worker stopped)."
        _dead_letter(delivery)
        return None
    return delivery


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
        .where(
            sending.endpoint_id == endpoint_id,
            sending.status == D.PROCESSING,
            sending.lease_expires_at > now,
        )
        .scalar_subquery()
    )
    return under_way < current_app.config["WEBHOOK_ENDPOINT_CONCURRENCY"]


def job_timeout() -> int:
    """RQ's limit for one `deliver` job: the lease, so RQ never kills a sender early."""
    return int(_lease().total_seconds())


def _lease() -> timedelta:
    """Long enough for the longest attempt the timeout allows, twice over."""
    return 2 * timedelta(seconds=current_app.config["WEBHOOK_TIMEOUT_SECONDS"]) + LEASE_MARGIN


@dataclass(frozen=True)
class Outgoing:
    """Everything a POST needs, read before the database transaction ends."""

    url: str
    mode: KeyMode
    active: bool
    body: bytes
    headers: dict


def prepare(delivery: WebhookDelivery) -> Outgoing:
    """The request for this attempt, signed now with the endpoint's current secret."""
    endpoint = db.session.get(WebhookEndpoint, delivery.endpoint_id)
    body = body_bytes(delivery.payload)
    timestamp = int(utcnow().timestamp())
    secret = secrets_box.decrypt(endpoint.secret_ciphertext)
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


def send(outgoing: Outgoing) -> Attempt:
    """POST one attempt (no database transaction open): every failure becomes an Attempt.

    The host is resolved once, here, and the request goes to one of those checked addresses
    (`_post_pinned`), so a DNS answer that changes after the check (rebinding) is never
    used. Redirects are not followed and the environment's proxies are ignored. The attempt
    ends after WEBHOOK_TIMEOUT_SECONDS in all (`AttemptDeadline`); an answer whose status
    came by then counts by its status, with as much of its body as came too."""
    if not outgoing.active:
        return Attempt(None, None, INACTIVE_ERROR)
    parts = urlsplit(outgoing.url)
    try:
        addresses = checked_addresses(parts.hostname or "", outgoing.mode)
    except DestinationRefused as refusal:
        return Attempt(None, None, str(refusal))
    timeout = current_app.config["WEBHOOK_TIMEOUT_SECONDS"]
    with AttemptDeadline(timeout) as deadline:
        try:
            with (
                pinned_session(parts.hostname, deadline) as session,
                _post_pinned(session, outgoing, addresses, deadline) as answer,
            ):
                body = _read_capped(answer)
        except (requests.exceptions.RequestException, ValueError) as error:
            return Attempt(None, None, _failure(error, deadline.expired, timeout))
    return Attempt(
        status_code=answer.status_code,
        body=body,
        error=None,
        retry_after=(
            retry_after(answer.headers.get("Retry-After"), MAX_RETRY_AFTER, utcnow())
            if answer.status_code == 429
            else None
        ),
    )


def _failure(error: Exception, out_of_time: bool, timeout: int) -> str:
    """What the delivery log says of an attempt that got no answer."""
    if out_of_time or isinstance(error, requests.exceptions.Timeout):
        return TIMED_OUT_ERROR.format(seconds=timeout)
    if isinstance(error, requests.exceptions.SSLError):
        return f"TLS error: {_short(error)}"
    if isinstance(error, requests.exceptions.ConnectionError):
        return f"Connection failed: {_short(error)}"
    return f"Request failed: {_short(error)}"


class AttemptDeadline:
    """The end of one attempt, whatever it is doing then: a timer shuts down every socket
    the attempt opened, so a slow connect's successor, a TLS handshake, headers or a body
    trickled a byte at a time all stop at the deadline. Per-read timeouts alone never stop an
    endpoint that sends a byte before each runs out (it held a worker for the whole job)."""

    def __init__(self, seconds: float):
        self.expired = False
        self._ends_at = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "AttemptDeadline":
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        with self._lock:
            for watched in self._sockets:
                watched.close()
            self._sockets.clear()

    def remaining(self) -> float:
        """Seconds left, at least a millisecond (a zero timeout would mean non-blocking)."""
        return max(self._ends_at - time.monotonic(), 0.001)

    def watch(self, connection: socket.socket) -> None:
        """Shut the connection down at the deadline (at once if it has passed). A duplicate
        of the socket is kept: TLS detaches the original, and shutting the duplicate down
        ends the same connection."""
        duplicate = connection.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.expired:
                _shut_down(duplicate)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for watched in self._sockets:
                _shut_down(watched)


def _shut_down(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the peer may have closed it already
        connection.shutdown(socket.SHUT_RDWR)


class _WatchedConnection:
    """An urllib3 connection whose socket its attempt's deadline watches."""

    def __init__(self, *args, deadline: AttemptDeadline, **kwargs):
        self._deadline = deadline
        super().__init__(*args, **kwargs)

    def _new_conn(self) -> socket.socket:
        connection = super()._new_conn()
        self._deadline.watch(connection)
        return connection


class _WatchedHTTPConnection(_WatchedConnection, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnection, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """No retries, and every connection made under the attempt's deadline (its pools pass
    the deadline on to each connection they make)."""

    def __init__(self, deadline: AttemptDeadline):
        self._deadline = deadline
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": functools.partial(_WatchedHTTPPool, deadline=self._deadline),
            "https": functools.partial(_WatchedHTTPSPool, deadline=self._deadline),
        }


class _PinnedHostAdapter(_DeadlineAdapter):
    """HTTPS to an address given in the URL while TLS sends SNI for, and verifies the
    certificate against, the endpoint's host name."""

    def __init__(self, hostname: str, deadline: AttemptDeadline):
        self._hostname = hostname
        super().__init__(deadline)

    def init_poolmanager(self, *args, **kwargs) -> None:
        kwargs.update(server_hostname=self._hostname, assert_hostname=self._hostname)
        super().init_poolmanager(*args, **kwargs)


def pinned_session(hostname: str, deadline: AttemptDeadline) -> requests.Session:
    """A session for one attempt to one endpoint host that ignores the environment
    (HTTP(S)_PROXY, .netrc, REQUESTS_CA_BUNDLE): a proxy would connect wherever the name
    resolves for it."""
    session = requests.Session()
    session.trust_env = False
    session.mount("https://", _PinnedHostAdapter(hostname, deadline))
    session.mount("http://", _DeadlineAdapter(deadline))
    return session


def _post_pinned(
    session: requests.Session, outgoing: Outgoing, addresses: list[str], deadline: AttemptDeadline
) -> requests.Response:
    """POST to the first checked address that accepts a connection (in the resolver's order,
    as a normal connection tries them), with the endpoint's own Host header."""
    *fallbacks, last = addresses
    for address in fallbacks:
        try:
            return _post_to(session, outgoing, address, deadline)
        except requests.exceptions.ConnectionError as error:
            reason = getattr(error.args[0], "reason", None) if error.args else None
            if not isinstance(reason, NewConnectionError):  # it connected: do not send twice
                raise
    return _post_to(session, outgoing, last, deadline)


def _post_to(
    session: requests.Session, outgoing: Outgoing, address: str, deadline: AttemptDeadline
) -> requests.Response:
    """The connect and each read wait at most what is left of the attempt (the deadline
    watches a socket only once it is connected)."""
    parts = urlsplit(outgoing.url)
    port = parts.port if parts.port is not None else (443 if parts.scheme == "https" else 80)
    literal = f"[{address}]" if ":" in address else address
    answer = session.post(
        urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, "")),
        data=outgoing.body,
        headers={**outgoing.headers, "Host": parts.netloc.rpartition("@")[2]},
        timeout=deadline.remaining(),
        allow_redirects=False,
        stream=True,
    )
    if deadline.expired:  # the deadline cut its headers short: what was parsed is no answer
        answer.close()
        raise requests.exceptions.Timeout("The headers did not arrive in time.")
    return answer


def _read_capped(answer: requests.Response) -> str:
    """At most MAX_RESPONSE_BODY bytes, taken as they arrive (a sized read would wait for its
    whole size); a dripping body is cut at the attempt's deadline, which shuts the socket."""
    kept = b""
    while len(kept) < MAX_RESPONSE_BODY:
        try:
            chunk = answer.raw.read1(MAX_RESPONSE_BODY - len(kept), decode_content=True)
        except urllib3.exceptions.HTTPError:  # stalled or cut short: the status has arrived
            break
        if not chunk:
            break
        kept += chunk
    return kept.decode("utf-8", errors="replace")


def record(
    delivery_id: str, attempt_number: int, attempt: Attempt, now: datetime | None = None
) -> WebhookDelivery:
    """Write an attempt's outcome: delivered, rescheduled, or dead-lettered after the last.
    Only the claimant of that attempt may: a late answer from a replaced sender is dropped."""
    now = now or utcnow()
    delivery = db.session.scalar(
        sa.select(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if delivery.status is not D.PROCESSING or delivery.attempts != attempt_number:
        return delivery  # cancelled meanwhile, or claimed again after our lease ran out
    delivery.last_status_code = attempt.status_code
    delivery.last_response_body = attempt.body
    delivery.last_error = attempt.error or _http_error(attempt.status_code)
    delivery.lease_expires_at = None
    delivery.updated_at = now
    if attempt.error == INACTIVE_ERROR:
        DELIVERY_MACHINE.move(delivery, D.CANCELLED)
        delivery.next_retry_at = None
    elif attempt.status_code is not None and 200 <= attempt.status_code < 300:
        DELIVERY_MACHINE.move(delivery, D.DELIVERED)
        delivery.delivered_at = now
        delivery.next_retry_at = None
        db.session.execute(
            sa.update(WebhookEndpoint)
            .where(WebhookEndpoint.id == delivery.endpoint_id)
            .values(consecutive_dead_letters=0)
        )
    elif delivery.attempts >= delivery.max_attempts:
        _dead_letter(delivery)
    else:
        DELIVERY_MACHINE.move(delivery, D.PENDING)
        wait = attempt.retry_after
        delivery.next_retry_at = now + (
            wait if wait is not None else retry_delay(delivery.attempts)
        )
    return delivery


def _dead_letter(delivery: WebhookDelivery) -> None:
    """FAILED for good; the endpoint's count of consecutive dead letters goes up atomically,
    and the owners are told (after commit) when it reaches the alert threshold."""
    DELIVERY_MACHINE.move(delivery, D.FAILED)
    delivery.next_retry_at = None
    delivery.lease_expires_at = None
    count = db.session.execute(
        sa.update(WebhookEndpoint)
        .where(WebhookEndpoint.id == delivery.endpoint_id)
        .values(consecutive_dead_letters=WebhookEndpoint.consecutive_dead_letters + 1)
        .returning(WebhookEndpoint.consecutive_dead_letters)
    ).scalar_one()
    if count == current_app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]:
        enqueue_after_commit(db.session(), "default", ALERT_JOB, delivery.endpoint_id)


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
    total = db.session.scalar(
        sa.select(sa.func.count()).select_from(WebhookDelivery).where(*conditions)
    )
    rows = db.session.scalars(
        sa.select(WebhookDelivery)
        .where(*conditions)
        .order_by(*LOG_ORDER)
        .offset(offset)
        .limit(limit)
    ).all()
    return list(rows), total


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
    endpoint = _active_endpoint(account_id, mode, original.endpoint_id)
    return _queue(_copy_for_resend(original, endpoint, utcnow()))


def recover(account_id: str, mode: KeyMode, endpoint_id: str, since: datetime) -> int:
    """Resend every dead-lettered delivery of an endpoint created at or after `since` that
    was not resent already (so a second click does not duplicate them)."""
    endpoint = _active_endpoint(account_id, mode, endpoint_id)
    resent = sa.orm.aliased(WebhookDelivery)
    failed = db.session.scalars(
        sa.select(WebhookDelivery).where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status == D.FAILED,
            WebhookDelivery.created_at >= since,
            ~sa.exists().where(resent.resent_from_id == WebhookDelivery.id),
        )
    ).all()
    now = utcnow()
    for original in failed:
        _queue(_copy_for_resend(original, endpoint, now))
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


def resendability(endpoint: WebhookEndpoint) -> Allowance:
    """May past deliveries be sent to the endpoint again (one, or all the failed ones)? Only
    while it is ACTIVE: an INACTIVE endpoint would abandon them at once."""
    if endpoint.status is EndpointStatus.ACTIVE:
        return ALLOWED
    return refused(
        Conflict("The endpoint is INACTIVE; activate it first.", code="endpoint_inactive")
    )


def _active_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> WebhookEndpoint:
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    resendability(endpoint).require()
    return endpoint


def alert_owners(endpoint_id: str) -> None:
    """E-mail the account's OWNERs and ADMINs that an endpoint keeps dead-lettering."""
    endpoint = db.session.get(WebhookEndpoint, endpoint_id)
    mail.send(
        accounts.manager_emails(endpoint.account_id),
        "Acme Pay: a webhook endpoint keeps failing",
        f"Deliveries to {endpoint.url} have failed {endpoint.consecutive_dead_letters} times in "
        "a row after every retry. The endpoint is still ACTIVE. Check it, then resend the "
        "failed deliveries from the dashboard or with POST "
        f"/v1/webhooks/endpoints/{endpoint.id}/recover.",
    )


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
    endpoints = _active_endpoints(account_id, mode)
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


def _active_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    return list(
        db.session.scalars(
            sa.select(WebhookEndpoint)
            .where(
                WebhookEndpoint.account_id == account_id,
                WebhookEndpoint.mode == mode,
                WebhookEndpoint.status == EndpointStatus.ACTIVE,
                WebhookEndpoint.deleted_at.is_(None),
            )
            .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
        )
    )


def active_endpoint_at(account_id: str, mode: KeyMode, url: str) -> WebhookEndpoint | None:
    """The account's active endpoint with exactly this URL (a per-transaction `webhookUrl`)."""
    return next((e for e in _active_endpoints(account_id, mode) if e.url == url), None)


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


class DestinationRefused(Exception):
    """The endpoint's host may not be called; the message says why."""


def destination_problem(host: str, mode: KeyMode) -> str | None:
    """Why an endpoint's host may not be registered, or None (see `checked_addresses`).
    Test endpoints are not resolved while WEBHOOK_ALLOW_PRIVATE_TEST_URLS is on."""
    if _private_allowed(mode):
        return None
    try:
        checked_addresses(host, mode)
    except DestinationRefused as refusal:
        return str(refusal)
    return None


def checked_addresses(host: str, mode: KeyMode) -> list[str]:
    """The host's addresses, resolved now, in the resolver's order; DestinationRefused when
    it does not resolve or any address is not public. Live endpoints must resolve to public
    addresses only; test endpoints too, unless WEBHOOK_ALLOW_PRIVATE_TEST_URLS (on in
    development and testing, so a merchant's laptop can receive)."""
    try:
        addresses = resolve(host)
    except (socket.gaierror, UnicodeError):
        raise DestinationRefused(f"The host {host} cannot be resolved.") from None
    if not addresses:
        raise DestinationRefused(f"The host {host} cannot be resolved.")
    if _private_allowed(mode):
        return addresses
    for address in addresses:
        kind = _not_public_unicast(ipaddress.ip_address(address.split("%")[0]))
        if kind:
            raise DestinationRefused(f"The host {host} resolves to {kind} ({address}).")
    return addresses


def _not_public_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What kind of address `ip` is when it is no public unicast address, else None.
    `is_global` refuses private, loopback, link-local, unspecified, broadcast and 240.0.0.0/4,
    but lets multicast (224.0.0.0/4, ff00::/8) and IPv6 outside global unicast through."""
    embedded = ip.version == 6 and any(ip in network for network in EMBEDDED_IPV4)
    if embedded or not ip.is_global or (ip.version == 6 and ip.ipv4_mapped):
        return "a private address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.version == 6 and ip not in IPV6_GLOBAL_UNICAST:
        return "a reserved address"
    return None


def resolve(host: str) -> list[str]:
    """The host's TCP addresses, without repeats, in the resolver's order."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def _private_allowed(mode: KeyMode) -> bool:
    return mode is KeyMode.TEST and current_app.config["WEBHOOK_ALLOW_PRIVATE_TEST_URLS"]


def _http_error(status_code: int | None) -> str | None:
    if status_code is None or 200 <= status_code < 300:
        return None
    return f"The endpoint answered HTTP {status_code}."


def _short(error: Exception) -> str:
    return str(error)[:300]
