"""Withdrawal (payout) schemas, field for field as the contract's "Payouts / withdrawals"."""

import marshmallow as ma

from app.api.schemas.fields import QueryArgsSchema, StrictBoolean
from app.formats.payouts import PayoutSchema
from app.models import WithdrawalStatus, WithdrawalType
from app.pix.keys import PixKeyType
from app.services.payouts import DESTINATION_FIELDS, MAX_DESCRIPTION, NewPayout

DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 100


class BankAccountInputSchema(ma.Schema):
    bankCode = ma.fields.String(required=True, metadata={"description": "3-digit COMPE code"})
    agency = ma.fields.String(required=True)
    account = ma.fields.String(required=True, metadata={"description": "With its check digit"})
    holderName = ma.fields.String(required=True, validate=ma.validate.Length(min=1, max=140))
    holderDocument = ma.fields.String(required=True, metadata={"description": "CPF or CNPJ"})


class WithdrawalCreateSchema(ma.Schema):
    type = ma.fields.String(
        required=True, validate=ma.validate.OneOf([t.value for t in WithdrawalType])
    )
    amount = ma.fields.Integer(
        required=True,
        strict=True,
        validate=ma.validate.Range(min=1),
        metadata={"error_code": "invalid_amount", "description": "Smallest unit, > 0."},
    )
    currency = ma.fields.String(
        required=True,
        validate=ma.validate.Length(min=3, max=8),
        metadata={"description": "BRL; USDT for CRYPTO"},
    )
    pixKey = ma.fields.String(validate=ma.validate.Length(max=77))
    pixKeyType = ma.fields.String(validate=ma.validate.OneOf([t.value for t in PixKeyType]))
    bankAccount = ma.fields.Nested(BankAccountInputSchema)
    cryptoAddress = ma.fields.String(validate=ma.validate.Length(max=42))
    cryptoNetwork = ma.fields.String(metadata={"enum": ["BSC"]})
    cryptoCurrency = ma.fields.String(metadata={"enum": ["USDT"]})
    description = ma.fields.String(
        allow_none=True, validate=ma.validate.Length(max=MAX_DESCRIPTION)
    )
    idempotencyKey = ma.fields.String(
        required=True,
        validate=ma.validate.Length(min=8, max=128),
        metadata={"description": "Required; a retry with the same key returns the first answer."},
    )
    test = StrictBoolean(
        load_default=False,
        metadata={"description": "true pays out from the test-mode (sandbox) wallet."},
    )

    @ma.post_load
    def _to_new_payout(self, data, **kwargs) -> NewPayout:
        every_destination = set().union(*DESTINATION_FIELDS.values())
        return NewPayout(
            type=data["type"],
            amount=data["amount"],
            currency=data["currency"].upper(),
            pix_key=data.get("pixKey"),
            pix_key_type=data.get("pixKeyType"),
            bank_account=data.get("bankAccount"),
            crypto_address=data.get("cryptoAddress"),
            crypto_network=data.get("cryptoNetwork"),
            crypto_currency=data.get("cryptoCurrency"),
            description=data.get("description"),
            test=data["test"],
            destination_fields={name for name in data if name in every_destination},
        )


class WithdrawalQuerySchema(QueryArgsSchema):
    page = ma.fields.Integer(load_default=1, validate=ma.validate.Range(min=1))
    limit = ma.fields.Integer(
        load_default=DEFAULT_PAGE_LIMIT, validate=ma.validate.Range(min=1, max=MAX_PAGE_LIMIT)
    )
    status = ma.fields.String(validate=ma.validate.OneOf([s.value for s in WithdrawalStatus]))
    mode = ma.fields.String(
        validate=ma.validate.OneOf(["live", "test"]),
        metadata={"description": "Only live or only test payouts; both when omitted."},
    )


class WithdrawalPageSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(PayoutSchema))
    total = ma.fields.Integer()
    page = ma.fields.Integer()
    limit = ma.fields.Integer()


class RejectionSchema(ma.Schema):
    reason = ma.fields.String(
        load_default=None, allow_none=True, validate=ma.validate.Length(max=500)
    )
