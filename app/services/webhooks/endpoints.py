"""Webhook endpoints: an account's registered destinations, per mode (a test key's endpoints
get test-mode events), and their signing secrets.

Create, read, change, switch on and off, delete (which abandons the deliveries still
waiting), rotate the secret, re-encrypt every secret under a new key, and say whether past
deliveries may be resent to one. Where a URL may point is `addresses.check_url`; an account
has one endpoint per URL in each mode (`_one_endpoint_per_url`).
"""

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from app.errors import Conflict, InvalidRequest, NotFound
from app.extensions import db
from app.formats import event_catalog
from app.marks import translatable
from app.models import DeliveryStatus, EndpointStatus, KeyMode, WebhookDelivery, WebhookEndpoint
from app.models.base import utcnow
from app.services import secrets_box
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.state_machine import StateMachine
from app.services.webhooks.addresses import check_url

# The owner switches an endpoint on and off at will; deleting it also switches it off.
ENDPOINT_MACHINE = StateMachine(
    "webhook endpoint", {status: frozenset(EndpointStatus) for status in EndpointStatus}
)
URL_TAKEN = "webhook_endpoint_exists"


def create_endpoint(
    account_id: str, mode: KeyMode, url: str, events: list[str]
) -> tuple[WebhookEndpoint, str]:
    """A new ACTIVE endpoint and its signing secret (64 hex), shown to the caller only now.
    A URL another endpoint of the account has in this mode is 409 (`_one_endpoint_per_url`)."""
    url = check_url(url, mode)
    secret, ciphertext = _new_secret()
    endpoint = WebhookEndpoint(
        account_id=account_id,
        mode=mode,
        url=url,
        events=_checked_events(events),
        status=EndpointStatus.ACTIVE,
        secret_ciphertext=ciphertext,
    )
    with _one_endpoint_per_url(account_id, mode, url):
        db.session.add(endpoint)
    return endpoint, secret


def list_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    return _oldest_first(_undeleted(account_id, mode))


def active_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    """The endpoints deliveries go to: not deleted and ACTIVE, oldest first."""
    return _oldest_first(
        _undeleted(account_id, mode).where(WebhookEndpoint.status == EndpointStatus.ACTIVE)
    )


def active_endpoint_at(account_id: str, mode: KeyMode, url: str) -> WebhookEndpoint | None:
    """The account's active endpoint with exactly this URL (a per-transaction `webhookUrl`)."""
    return next((e for e in active_endpoints(account_id, mode) if e.url == url), None)


def get_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> WebhookEndpoint:
    endpoint = db.session.scalar(
        _undeleted(account_id, mode).where(WebhookEndpoint.id == endpoint_id)
    )
    if endpoint is None:
        raise NotFound(translatable("No such webhook endpoint."))
    return endpoint


def _undeleted(account_id: str, mode: KeyMode) -> sa.Select:
    """The account's endpoints in this mode that were not deleted."""
    return sa.select(WebhookEndpoint).where(
        WebhookEndpoint.account_id == account_id,
        WebhookEndpoint.mode == mode,
        WebhookEndpoint.deleted_at.is_(None),
    )


def _oldest_first(endpoints: sa.Select) -> list[WebhookEndpoint]:
    return list(
        db.session.scalars(endpoints.order_by(WebhookEndpoint.created_at, WebhookEndpoint.id))
    )


def update_endpoint(
    account_id: str, mode: KeyMode, endpoint_id: str, changes: dict
) -> WebhookEndpoint:
    """Change only what is sent: url, events, status. A URL another endpoint of the account
    has in this mode is 409 (`_one_endpoint_per_url`)."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    if "url" in changes:
        url = check_url(changes["url"], mode)
        with _one_endpoint_per_url(account_id, mode, url, other_than=endpoint.id):
            endpoint.url = url
    if "events" in changes:
        endpoint.events = _checked_events(changes["events"])
    if "status" in changes:
        ENDPOINT_MACHINE.move(endpoint, EndpointStatus(changes["status"]))
    endpoint.updated_at = utcnow()
    return endpoint


@contextmanager
def _one_endpoint_per_url(
    account_id: str, mode: KeyMode, url: str, *, other_than: str | None = None
) -> Iterator[None]:
    """Write the endpoint (in the block) only if no other endpoint of the account in this mode
    has exactly this URL: otherwise each event would be delivered twice to one receiver. A
    disabled endpoint counts (it can be enabled again), a deleted one does not. URLs are
    compared as stored, character for character, as `check_url` keeps them.

    A twin written meanwhile by a concurrent request is caught by the unique index
    `uq_webhook_endpoints_url` when the block is flushed, and is the same 409; the failed
    write leaves the transaction unusable, so it is rolled back (the request fails anyway)."""
    twin = _endpoint_with_url(account_id, mode, url, other_than)
    if twin is not None:
        raise _url_taken(twin)
    yield
    try:
        db.session.flush()
    except IntegrityError:
        db.session.rollback()
        twin = _endpoint_with_url(account_id, mode, url, other_than)
        if twin is None:
            raise
        raise _url_taken(twin) from None


def _endpoint_with_url(
    account_id: str, mode: KeyMode, url: str, other_than: str | None
) -> WebhookEndpoint | None:
    endpoints = _undeleted(account_id, mode).where(WebhookEndpoint.url == url)
    if other_than is not None:
        endpoints = endpoints.where(WebhookEndpoint.id != other_than)
    return db.session.scalar(endpoints.limit(1))


def _url_taken(twin: WebhookEndpoint) -> Conflict:
    inactive = twin.status is EndpointStatus.INACTIVE
    return Conflict(
        translatable(
            "Webhook endpoint %(id)s (INACTIVE: it can be enabled again) already has this URL; "
            "each URL has one endpoint per mode, so change that endpoint's events instead."
        )
        if inactive
        else translatable(
            "Webhook endpoint %(id)s already has this URL; each URL has one endpoint per mode, "
            "so change that endpoint's events instead."
        ),
        values={"id": twin.id},
        code=URL_TAKEN,
        param="url",
    )


def rotate_secret(account_id: str, mode: KeyMode, endpoint_id: str) -> tuple[WebhookEndpoint, str]:
    """A new secret, used by every delivery from now on (no overlap window)."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    secret, endpoint.secret_ciphertext = _new_secret()
    endpoint.updated_at = utcnow()
    return endpoint, secret


def _new_secret() -> tuple[str, str]:
    """A signing secret (64 hex) and its ciphertext, the only form that is stored."""
    secret = secrets.token_hex(32)
    return secret, secrets_box.encrypt(secret)


def delete_endpoint(account_id: str, mode: KeyMode, endpoint_id: str) -> None:
    """Remove the endpoint; its deliveries still waiting are abandoned (CANCELLED)."""
    endpoint = get_endpoint(account_id, mode, endpoint_id)
    endpoint.deleted_at = utcnow()
    ENDPOINT_MACHINE.move(endpoint, EndpointStatus.INACTIVE)
    db.session.execute(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.endpoint_id == endpoint.id,
            WebhookDelivery.status.in_((DeliveryStatus.PENDING, DeliveryStatus.PROCESSING)),
        )
        .values(status=DeliveryStatus.CANCELLED, next_retry_at=None, updated_at=utcnow())
    )


def reencrypt_secrets() -> int:
    """Re-encrypt every endpoint secret under the newest key (after adding one in front of
    SECRETS_ENCRYPTION_KEYS); then the old key can be removed. Returns how many."""
    endpoints = db.session.scalars(sa.select(WebhookEndpoint)).all()
    for endpoint in endpoints:
        endpoint.secret_ciphertext = secrets_box.rotate(endpoint.secret_ciphertext)
    return len(endpoints)


def resendability(endpoint: WebhookEndpoint) -> Allowance:
    """May past deliveries be sent to the endpoint again (one, or all the failed ones)? Only
    while it is ACTIVE: an INACTIVE endpoint would abandon them at once."""
    if endpoint.status is EndpointStatus.ACTIVE:
        return ALLOWED
    return refused(
        Conflict(
            translatable("The endpoint is INACTIVE; activate it first."), code="endpoint_inactive"
        )
    )


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
