"""What a webhook delivery sends: the envelope of each family and its signature, and the
public shapes of endpoints and deliveries.

Canonical (`charge.*`, `payout.*`, dispute events): `{id, object, api_version, type,
created_at, data}` signed `X-Acme-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`.
Legacy (`payment.*`, `withdrawal.*`): `{event, data}` signed `sha256=<hex HMAC-SHA256 of body>`.
"""

import hashlib
import hmac
import json

from app.formats.event_catalog import LEGACY_EVENTS
from app.models import Event, WebhookDelivery, WebhookEndpoint


def envelope(event: Event) -> dict:
    if event.type in LEGACY_EVENTS:
        return {"event": event.type, "data": event.data}
    return {
        "id": event.id,
        "object": "event",
        "api_version": event.api_version,
        "type": event.type,
        "created_at": event.created_at.isoformat(),
        "data": event.data,
    }


def body_bytes(payload: dict) -> bytes:
    """The exact bytes sent (and signed); the same on every retry."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def signature(event_type: str, secret: str, body: bytes, timestamp: int) -> str:
    key = secret.encode()
    if event_type in LEGACY_EVENTS:
        return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
    signed = f"{timestamp}.".encode() + body
    return f"t={timestamp},v1=" + hmac.new(key, signed, hashlib.sha256).hexdigest()


def endpoint_fields(endpoint: WebhookEndpoint) -> dict:
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": endpoint.events,
        "status": str(endpoint.status),
        "createdAt": endpoint.created_at,
        "updatedAt": endpoint.updated_at,
    }


def delivery_fields(delivery: WebhookDelivery) -> dict:
    return {
        "id": delivery.id,
        "endpointId": delivery.endpoint_id,
        "eventType": delivery.event_type,
        "status": str(delivery.status),
        "attempts": delivery.attempts,
        "maxAttempts": delivery.max_attempts,
        "lastStatusCode": delivery.last_status_code,
        "lastError": delivery.last_error,
        "lastResponseBody": delivery.last_response_body,
        "lastAttemptAt": delivery.last_attempt_at,
        "nextRetryAt": delivery.next_retry_at,
        "deliveredAt": delivery.delivered_at,
        "createdAt": delivery.created_at,
        "updatedAt": delivery.updated_at,
        "payload": delivery.payload,
    }
