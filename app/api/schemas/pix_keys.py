"""Schemas of `POST /v1/withdrawals/validate-pix-key`, as the contract's "Payouts / withdrawals".

Only the request's shape is checked here (400); whether the key itself is valid is the
answer (200), decided by `app.pix.keys.validate`.
"""

import marshmallow as ma

from app.api.schemas.fields import QueryArgsSchema, Text
from app.pix.keys import PixKeyType


class PixKeyValidationSchema(ma.Schema):
    key = Text(
        required=True, metadata={"description": "The key; surrounding whitespace is ignored."}
    )
    type = ma.fields.Enum(
        PixKeyType,
        by_value=True,
        load_default=None,
        allow_none=True,
        metadata={"description": "Validate against this type only; detected when omitted."},
    )


class StrictCnpjQuerySchema(QueryArgsSchema):
    strictCnpj = ma.fields.Boolean(
        truthy={"true"},
        falsy={"false"},
        load_default=True,
        metadata={
            "description": "false accepts a CNPJ whose only fault is its check digits, for "
            "accounts where support enabled the waiver; ignored (the key stays invalid, with "
            "an error saying so) for other accounts."
        },
    )


class PixKeyCheckSchema(ma.Schema):
    """Dumped from `app.pix.keys.PixKeyCheck`; `normalised` only when valid, `errors` only not."""

    valid = ma.fields.Boolean()
    type = ma.fields.Enum(
        PixKeyType,
        by_value=True,
        allow_none=True,
        metadata={"description": "null when no type could be detected."},
    )
    normalised = ma.fields.String(metadata={"description": "Only when valid: the key as stored."})
    errors = ma.fields.List(ma.fields.String(), metadata={"description": "Only when invalid."})

    @ma.post_dump
    def _drop_the_other_case(self, data, **kwargs):
        data.pop("errors" if data["valid"] else "normalised", None)
        return data
