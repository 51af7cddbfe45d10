"""Webhook schemas, field for field as the contract's "Webhooks" section."""

import marshmallow as ma

from app.api.schemas.fields import (
    DateTimeParam,
    Pattern,
    QueryArgsSchema,
    QueryInteger,
    Text,
)
from app.formats.event_catalog import DELIVERABLE_EVENTS, SUBSCRIBABLE
from app.models import DeliveryStatus, EndpointStatus
from app.models.base import MAX_PAGE_OR_OFFSET
from app.services.webhooks.addresses import MAX_URL_LENGTH

DEFAULT_DELIVERY_LIMIT = 25
MAX_DELIVERY_LIMIT = 100
_HOST_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HEX_GROUP = "[0-9A-Fa-f]{1,4}"
_PORT = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"


def _ipv6_address() -> str:
    """RFC 4291's text forms of an IPv6 address, but those ending in an IPv4 address: eight
    groups, or up to seven around `::`. Python's `urlsplit` raises on anything else in [ ]."""
    forms = [f"(?:{_HEX_GROUP}:){{7}}{_HEX_GROUP}", f"::(?:(?:{_HEX_GROUP}:){{0,6}}{_HEX_GROUP})?"]
    for before in range(1, 8):
        after = f"(?:(?:{_HEX_GROUP}:){{0,{6 - before}}}{_HEX_GROUP})?" if before < 7 else ""
        forms.append(f"(?:{_HEX_GROUP}:){{{before - 1}}}{_HEX_GROUP}::{after}")
    return "|".join(forms)


_HOST = rf"(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})*|\[(?:{_ipv6_address()})\])"
# What `webhooks.addresses.check_url` takes apart from where the host points: http(s), a host
# name, IPv4 or [IPv6] address, a port from 1 to 65535, no credentials, no blank or control
# character anywhere.
ENDPOINT_URL = rf"^https?://{_HOST}(?::{_PORT})?(?:[/?#][!-~]*)?$"
ENDPOINT_URL_REFUSED = (
    "Not an http(s) address with a host, an optional port from 1 to 65535, no credentials and "
    "no blank or control character."
)
ENDPOINT_URL_RULE = (
    "An http(s) address with a host name, IPv4 or [IPv6] address, an optional port (1-65535), no "
    "credentials and no blank or control character. A live key's endpoint must use https "
    "and its host must resolve to public unicast addresses only; so must a test key's, "
    "unless the server lets test endpoints reach private addresses (development)."
)


def endpoint_url(**kwargs) -> ma.fields.String:
    return ma.fields.String(
        validate=[
            ma.validate.Length(max=MAX_URL_LENGTH),
            Pattern(ENDPOINT_URL, error=ENDPOINT_URL_REFUSED),
        ],
        metadata={"description": ENDPOINT_URL_RULE},
        **kwargs,
    )


def event_names(**kwargs) -> ma.fields.List:
    return ma.fields.List(
        ma.fields.String(metadata={"enum": sorted(SUBSCRIBABLE)}),
        validate=ma.validate.Length(min=1, max=50),
        metadata={
            "description": "Names from /v1/webhooks/event-catalog (the service says which "
            "names it does not know)."
        },
        **kwargs,
    )


class EndpointCreateSchema(ma.Schema):
    url = endpoint_url(required=True)
    events = event_names(required=True)


class EndpointUpdateSchema(ma.Schema):
    url = endpoint_url()
    events = event_names()
    status = ma.fields.String(validate=ma.validate.OneOf([s.value for s in EndpointStatus]))


class RotateSecretSchema(ma.Schema):
    id = Text(metadata={"description": "The endpoint id (optional; must match)."})


class RecoverSchema(ma.Schema):
    since = DateTimeParam(required=True, metadata={"description": "Resend FAILED since this."})


class EndpointSchema(ma.Schema):
    id = ma.fields.String()
    url = ma.fields.String()
    events = ma.fields.List(ma.fields.String())
    status = ma.fields.String(metadata={"enum": [s.value for s in EndpointStatus]})
    createdAt = ma.fields.DateTime()
    updatedAt = ma.fields.DateTime()


class EndpointWithSecretSchema(EndpointSchema):
    secret = ma.fields.String(metadata={"description": "64 hex characters, shown only now."})


class EndpointListSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(EndpointSchema))


class EndpointUpdatedSchema(ma.Schema):
    id = ma.fields.String()
    url = ma.fields.String()
    events = ma.fields.List(ma.fields.String())
    status = ma.fields.String()


class SecretSchema(ma.Schema):
    id = ma.fields.String()
    secret = ma.fields.String()


class DeletedSchema(ma.Schema):
    deleted = ma.fields.Boolean()


class RecoveredSchema(ma.Schema):
    recovered = ma.fields.Integer(metadata={"description": "Deliveries queued again."})


class CatalogEntrySchema(ma.Schema):
    event = ma.fields.String()
    description = ma.fields.String()
    legacy = ma.fields.Boolean()


class DeliveryQuerySchema(QueryArgsSchema):
    status = ma.fields.String(validate=ma.validate.OneOf([s.value for s in DeliveryStatus]))
    eventType = ma.fields.String(validate=ma.validate.OneOf(sorted(DELIVERABLE_EVENTS)))
    endpointId = Text(validate=ma.validate.Length(min=1, max=36))
    limit = QueryInteger(minimum=1, maximum=MAX_DELIVERY_LIMIT, load_default=DEFAULT_DELIVERY_LIMIT)
    offset = QueryInteger(minimum=0, maximum=MAX_PAGE_OR_OFFSET, load_default=0)


class DeliverySchema(ma.Schema):
    id = ma.fields.String()
    endpointId = ma.fields.String()
    eventType = ma.fields.String()
    status = ma.fields.String(metadata={"enum": [s.value for s in DeliveryStatus]})
    attempts = ma.fields.Integer()
    maxAttempts = ma.fields.Integer()
    lastStatusCode = ma.fields.Integer(allow_none=True)
    lastError = ma.fields.String(allow_none=True)
    lastResponseBody = ma.fields.String(allow_none=True)
    lastAttemptAt = ma.fields.DateTime(allow_none=True)
    nextRetryAt = ma.fields.DateTime(allow_none=True)
    deliveredAt = ma.fields.DateTime(allow_none=True)
    createdAt = ma.fields.DateTime()
    updatedAt = ma.fields.DateTime()
    payload = ma.fields.Dict()


class DeliveryPageSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(DeliverySchema))
    total = ma.fields.Integer()
    limit = ma.fields.Integer()
    offset = ma.fields.Integer()


class DeliveryStatsSchema(ma.Schema):
    total = ma.fields.Integer()
    PENDING = ma.fields.Integer()
    PROCESSING = ma.fields.Integer()
    DELIVERED = ma.fields.Integer()
    FAILED = ma.fields.Integer()
    CANCELLED = ma.fields.Integer()
