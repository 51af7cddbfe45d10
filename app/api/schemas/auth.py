"""Login and token schemas for the dashboard JWT routes."""

import marshmallow as ma

from app.api.schemas.fields import Text


class LoginSchema(ma.Schema):
    email = Text(required=True, validate=ma.validate.Length(min=1, max=254))
    password = Text(required=True, validate=ma.validate.Length(min=1, max=1024))
    accountId = Text(
        load_default=None,
        metadata={"description": "Required when the user belongs to several accounts."},
    )


class TokenAccountSchema(ma.Schema):
    id = ma.fields.String()
    name = ma.fields.String()


class TokenUserSchema(ma.Schema):
    id = ma.fields.String()
    email = ma.fields.String()
    name = ma.fields.String(allow_none=True)


class TokenSchema(ma.Schema):
    token = ma.fields.String(metadata={"description": "Send as `Authorization: Bearer <token>`."})
    tokenType = ma.fields.Constant("Bearer")
    expiresAt = ma.fields.DateTime()
    expiresIn = ma.fields.Integer(metadata={"description": "Seconds until expiry."})
    role = ma.fields.String()
    account = ma.fields.Nested(TokenAccountSchema, allow_none=True)
    user = ma.fields.Nested(TokenUserSchema)
