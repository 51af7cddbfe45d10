"""Webhook schemas, field for field as the contract's "Webhooks" section."""

import marshmallow as ma

from app.api.schemas.fields import DateTimeParam, QueryArgsSchema, QueryInteger
from app.models import DeliveryStatus, EndpointStatus
from app.services.event_catalog import DELIVERABLE_EVENTS

DEFAULT_DELIVERY_LIMIT = 25
MAX_DELIVERY_LIMIT = 100


class EndpointCreateSchema(ma.Schema):
    url = ma.fields.String(required=True, validate=ma.validate.Length(min=1, max=2048))
    events = ma.fields.List(
        ma.fields.String(validate=ma.validate.Length(min=1, max=64)),
        required=True,
        validate=ma.validate.Length(min=1, max=50),
    )


class EndpointUpdateSchema(ma.Schema):
    url = ma.fields.String(validate=ma.validate.Length(min=1, max=2048))
    events = ma.fields.List(
        ma.fields.String(validate=ma.validate.Length(min=1, max=64)),
        validate=ma.validate.Length(min=1, max=50),
    )
    status = ma.fields.String(validate=ma.validate.OneOf([s.value for s in EndpointStatus]))


class RotateSecretSchema(ma.Schema):
    id = ma.fields.String(metadata={"description": "The endpoint id (optional; must match)."})


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
    endpointId = ma.fields.String(validate=ma.validate.Length(min=1, max=36))
    limit = QueryInteger(
        load_default=DEFAULT_DELIVERY_LIMIT,
        validate=ma.validate.Range(min=1, max=MAX_DELIVERY_LIMIT),
    )
    offset = QueryInteger(load_default=0, validate=ma.validate.Range(min=0))


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
