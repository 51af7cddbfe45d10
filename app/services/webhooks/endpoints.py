"""Webhook endpoints: an account's registered destinations, per mode (a test key's endpoints
get test-mode events), and their signing secrets.

Create, read, change, switch on and off, delete (which abandons the deliveries still
waiting), rotate the secret, re-encrypt every secret under a new key, and say whether past
deliveries may be resent to one. Where a URL may point is `addresses.check_url`.
"""

import secrets

import sqlalchemy as sa

from app.errors import Conflict, InvalidRequest, NotFound
from app.extensions import db
from app.formats import event_catalog
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


def create_endpoint(
    account_id: str, mode: KeyMode, url: str, events: list[str]
) -> tuple[WebhookEndpoint, str]:
    """A new ACTIVE endpoint and its signing secret (64 hex), shown to the caller only now."""
    secret, ciphertext = _new_secret()
    endpoint = WebhookEndpoint(
        account_id=account_id,
        mode=mode,
        url=check_url(url, mode),
        events=_checked_events(events),
        status=EndpointStatus.ACTIVE,
        secret_ciphertext=ciphertext,
    )
    db.session.add(endpoint)
    db.session.flush()
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
        raise NotFound("No such webhook endpoint.")
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
        Conflict("The endpoint is INACTIVE; activate it first.", code="endpoint_inactive")
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
