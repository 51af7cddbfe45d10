"""API key schemas, field for field as the contract's "API keys" section."""

import marshmallow as ma

from app.api.schemas.fields import StrictBoolean, Text
from app.models import KeyMode
from app.services.api_keys import MAX_LABEL_LENGTH


class ApiKeyRotateSchema(ma.Schema):
    label = Text(
        load_default=None, allow_none=True, validate=ma.validate.Length(max=MAX_LABEL_LENGTH)
    )


class ApiKeyCreateSchema(ApiKeyRotateSchema):
    """A new key takes the label a rotation may change, and its mode."""

    test = StrictBoolean(load_default=False)


class ApiKeySchema(ma.Schema):
    id = ma.fields.String()
    prefix = ma.fields.String()
    label = ma.fields.String(allow_none=True)
    createdAt = ma.fields.DateTime(attribute="created_at")
    mode = ma.fields.Enum(KeyMode, by_value=True)


class IssuedApiKeySchema(ma.Schema):
    """Dumped from `services.api_keys.IssuedKey`: the stored key plus its one-time cleartext."""

    id = ma.fields.String(attribute="key.id")
    apiKey = ma.fields.String(attribute="cleartext")
    fingerprint = ma.fields.String(attribute="key.fingerprint")
    prefix = ma.fields.String(attribute="key.prefix")
    label = ma.fields.String(attribute="key.label", allow_none=True)
    createdAt = ma.fields.DateTime(attribute="key.created_at")
    mode = ma.fields.Enum(KeyMode, by_value=True, attribute="key.mode")


class ApiKeyAccessSchema(ma.Schema):
    canManage = ma.fields.Boolean()


class ApiKeyListSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(ApiKeySchema))
    access = ma.fields.Nested(ApiKeyAccessSchema)


class RevokedSchema(ma.Schema):
    revoked = ma.fields.Boolean()
