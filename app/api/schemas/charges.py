"""Request schemas of the charge routes, field for field as the contract's "Charges" section.

Types, shapes and bounds are checked here (400 with `details`) and so stated in the OpenAPI
document; the service checks them again for the dashboard form, with what no schema can say:
the rules between fields (payer lock) and check digits.
"""

import marshmallow as ma

from app.api.schemas.due import DueInputSchema
from app.api.schemas.fields import (
    TAX_ID_RULE,
    UUID,
    Amount,
    CursorPageSchema,
    DateTimeParam,
    Day,
    EmailAddress,
    Pattern,
    QueryArgsSchema,
    QueryInteger,
    TaxId,
    Text,
)
from app.formats.charges import CHARGE_ID_PREFIX, PUBLIC_STATUSES, ChargeSchema
from app.services.customers import E164
from app.services.transactions.charges import (
    DEFAULT_LIST_LIMIT,
    MAX_AMOUNT,
    MAX_DESCRIPTION,
    MAX_LIST_LIMIT,
    MAX_METADATA_BYTES,
    MAX_METADATA_KEY_LENGTH,
    MAX_METADATA_KEYS,
    MIN_EXPIRES_IN,
    PIX_CURRENCY,
    Customer,
    NewCharge,
)

CHARGE_ID = f"^{CHARGE_ID_PREFIX}{UUID}$"
METADATA_RULE = (
    f"At most {MAX_METADATA_KEYS} keys of at most {MAX_METADATA_KEY_LENGTH} characters, "
    f"{MAX_METADATA_BYTES} bytes as JSON, no text holding U+0000; keys starting with _ and "
    "the reserved description, failure and med are dropped."
)


class CustomerInputSchema(ma.Schema):
    name = Text(allow_none=True, validate=ma.validate.Length(max=140))
    document = TaxId(allow_none=True)
    email = EmailAddress(allow_none=True)
    phone = ma.fields.String(
        allow_none=True,
        validate=Pattern.whole(E164, error="Send the phone number in E.164 form."),
        metadata={"description": "E.164, such as +5511987654321."},
    )


class ChargeCreateSchema(ma.Schema):
    amount = Amount(required=True, maximum=MAX_AMOUNT, description="Centavos.")
    currency = ma.fields.String(
        load_default=PIX_CURRENCY,
        metadata={"enum": [PIX_CURRENCY], "description": "Pix charges are in BRL."},
    )
    payment_method = ma.fields.String(required=True, metadata={"enum": ["pix"]})
    description = Text(allow_none=True, validate=ma.validate.Length(max=MAX_DESCRIPTION))
    expires_in = ma.fields.Integer(
        allow_none=True,
        strict=True,
        validate=ma.validate.Range(min=MIN_EXPIRES_IN),
        metadata={"description": "Seconds; larger values than 86400 are capped at 86400."},
    )
    customer = ma.fields.Nested(CustomerInputSchema, load_default=dict)
    expected_payer_tax_id = TaxId(
        allow_none=True,
        metadata={"description": f"Payer lock. {TAX_ID_RULE}"},
    )
    metadata = ma.fields.Dict(
        keys=ma.fields.String(), load_default=dict, metadata={"description": METADATA_RULE}
    )
    due = ma.fields.Nested(
        DueInputSchema,
        allow_none=True,
        metadata={
            "description": "A due date (Pix cobrança com vencimento): payable until the due "
            "date, then for days_valid_after more days with fine and interest. Needs "
            "customer.name and customer.document; expires_in does not apply."
        },
    )

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
            due=data.get("due"),
        )


class PixChargeCreateSchema(ChargeCreateSchema):
    """The `/v1/pix/charges` shortcut: `payment_method` is pix and may be left out."""

    payment_method = ma.fields.String(load_default="pix", metadata={"enum": ["pix"]})


class ChargeQuerySchema(QueryArgsSchema):
    """List filters; anything else (`page`, `offset`, a typo) is refused, never ignored."""

    limit = QueryInteger(minimum=1, maximum=MAX_LIST_LIMIT, load_default=DEFAULT_LIST_LIMIT)
    starting_after = ma.fields.String(
        validate=Pattern(CHARGE_ID, error="starting_after takes a charge id (ch_…)."),
        metadata={"description": "The previous page's next_cursor: one of your charges' ids."},
    )
    status = ma.fields.String(validate=ma.validate.OneOf(PUBLIC_STATUSES))
    created_after = DateTimeParam(metadata={"description": "ISO 8601, inclusive; UTC if no zone."})
    created_before = DateTimeParam(metadata={"description": "ISO 8601, inclusive; UTC if no zone."})
    customer_id = TaxId(metadata={"description": f"The payer's document. {TAX_ID_RULE}"})


class ChargeListSchema(CursorPageSchema):
    data = ma.fields.List(ma.fields.Nested(ChargeSchema))


class SandboxPaymentSchema(ma.Schema):
    amount = ma.fields.Integer(
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_AMOUNT),
        metadata={
            "description": "Defaults to the amount due today: the charge amount, or what its "
            "due date's terms ask today."
        },
    )
    payer_document = Text(
        allow_none=True,
        validate=ma.validate.Length(max=32),
        metadata={
            "description": "Defaults to the payer lock or customer document; null simulates a "
            "bank that reports no payer document."
        },
    )
    payer_name = Text(allow_none=True, validate=ma.validate.Length(max=140))


class LocationQuerySchema(QueryArgsSchema):
    """What a payer's bank may ask a location (API Pix `GET /cobv/{pixUrlAccessToken}`)."""

    DPP = Day(
        metadata={
            "description": "The intended payment day, YYYY-MM-DD: a charge with a due date "
            "answers with its amounts on that day (today when left out)."
        }
    )
    codMun = ma.fields.String(
        validate=Pattern(r"^[0-9]{7}$", error="codMun is an IBGE municipality code (7 digits)."),
        metadata={"description": "The payer's municipality; national holidays apply to all."},
    )
