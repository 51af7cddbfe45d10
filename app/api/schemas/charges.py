"""Request schemas of the charge routes, field for field as the contract's "Charges" section.

Types and shapes are checked here (400 with `details`); the rules between fields (payer
lock, check digits, limits) are the service's, so the dashboard form gets them too.
"""

import marshmallow as ma

from app.api.schemas.fields import DateTimeParam, QueryArgsSchema, QueryInteger
from app.formats.charges import PUBLIC_STATUSES, ChargeSchema
from app.services.charges import (
    DEFAULT_LIST_LIMIT,
    MAX_AMOUNT,
    MAX_DESCRIPTION,
    MAX_LIST_LIMIT,
    Customer,
    NewCharge,
)


class CustomerInputSchema(ma.Schema):
    name = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=140))
    document = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=32))
    email = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=254))
    phone = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=32))


class ChargeCreateSchema(ma.Schema):
    amount = ma.fields.Integer(
        required=True,
        strict=True,
        validate=ma.validate.Range(min=1),
        metadata={"error_code": "invalid_amount", "description": "Centavos, > 0."},
    )
    currency = ma.fields.String(load_default="BRL", metadata={"description": "BRL for Pix."})
    payment_method = ma.fields.String(required=True, metadata={"enum": ["pix"]})
    description = ma.fields.String(
        allow_none=True, validate=ma.validate.Length(max=MAX_DESCRIPTION)
    )
    expires_in = ma.fields.Integer(
        allow_none=True,
        strict=True,
        metadata={"description": "Seconds, 60-86400; larger values are capped at 86400."},
    )
    customer = ma.fields.Nested(CustomerInputSchema, load_default=dict)
    expected_payer_tax_id = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=32),
        metadata={"description": "Payer lock: CPF (11) or CNPJ (14) with valid check digits."},
    )
    metadata = ma.fields.Dict(keys=ma.fields.String(), load_default=dict)

    @ma.post_load
    def _to_new_charge(self, data, **kwargs) -> NewCharge:
        return NewCharge(
            amount=data["amount"],
            payment_method=data["payment_method"],
            currency=data["currency"],
            description=data.get("description"),
            expires_in=data.get("expires_in"),
            customer=Customer(**data["customer"]),
            expected_payer_tax_id=data.get("expected_payer_tax_id"),
            metadata=data["metadata"],
        )


class PixChargeCreateSchema(ChargeCreateSchema):
    """The `/v1/pix/charges` shortcut: `payment_method` is pix and may be left out."""

    payment_method = ma.fields.String(load_default="pix", metadata={"enum": ["pix"]})


class ChargeQuerySchema(QueryArgsSchema):
    """List filters; anything else (`page`, `offset`, a typo) is refused, never ignored."""

    limit = QueryInteger(
        load_default=DEFAULT_LIST_LIMIT, validate=ma.validate.Range(min=1, max=MAX_LIST_LIMIT)
    )
    starting_after = ma.fields.String(metadata={"description": "A ch_ id (cursor)."})
    status = ma.fields.String(validate=ma.validate.OneOf(PUBLIC_STATUSES))
    created_after = DateTimeParam(metadata={"description": "ISO 8601, inclusive; UTC if no zone."})
    created_before = DateTimeParam(metadata={"description": "ISO 8601, inclusive; UTC if no zone."})
    customer_id = ma.fields.String(metadata={"description": "Payer document (CPF or CNPJ)."})


class ChargeListSchema(ma.Schema):
    object = ma.fields.String(metadata={"enum": ["list"]})
    data = ma.fields.List(ma.fields.Nested(ChargeSchema))
    has_more = ma.fields.Boolean()
    next_cursor = ma.fields.String(allow_none=True)


class SandboxPaymentSchema(ma.Schema):
    amount = ma.fields.Integer(
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_AMOUNT),
        metadata={"description": "Defaults to the charge amount."},
    )
    payer_document = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=32),
        metadata={
            "description": "Defaults to the payer lock or customer document; null simulates a "
            "bank that reports no payer document."
        },
    )
    payer_name = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=140))
