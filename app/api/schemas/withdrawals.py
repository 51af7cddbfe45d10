"""Withdrawal (payout) schemas, field for field as the contract's "Payouts / withdrawals"."""

import marshmallow as ma

from app.api.schemas.fields import (
    Amount,
    IdempotencyKey,
    NumberedPageSchema,
    Pattern,
    QueryArgsSchema,
    QueryInteger,
    StrictBoolean,
    TaxId,
    Text,
    trimmed_text,
)
from app.formats.payouts import PayoutSchema
from app.models import PayoutStatus, PayoutType
from app.models.base import MAX_PAGE_OR_OFFSET
from app.pix.keys import PixKeyType
from app.services.payouts.funding import BRL
from app.services.payouts.requesting import (
    AGENCY,
    BANK_ACCOUNT_NUMBER,
    BANK_CODE,
    BEP20_ADDRESS,
    CRYPTO_CURRENCY,
    CRYPTO_NETWORK,
    DESTINATION_FIELDS,
    MAX_DESCRIPTION,
    NewPayout,
)

DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 100
_DESTINATIONS = "; ".join(
    f"{kind}: {', '.join(sorted(names))}" for kind, names in DESTINATION_FIELDS.items()
)


class BankAccountInputSchema(ma.Schema):
    bankCode = ma.fields.String(
        required=True,
        validate=Pattern.whole(BANK_CODE),
        metadata={"description": "3-digit COMPE code"},
    )
    agency = ma.fields.String(
        required=True,
        validate=Pattern.whole(AGENCY),
        metadata={"description": "Up to 5 digits, with an optional check digit"},
    )
    account = ma.fields.String(
        required=True,
        validate=Pattern.whole(BANK_ACCOUNT_NUMBER),
        metadata={"description": "With its check digit"},
    )
    holderName = ma.fields.String(
        required=True, validate=[ma.validate.Length(max=140), Pattern(trimmed_text(1))]
    )
    holderDocument = TaxId(required=True)


class WithdrawalCreateSchema(ma.Schema):
    class Meta:
        description = (
            f"Each type takes its destination fields, all required, and no others: {_DESTINATIONS}."
        )

    type = ma.fields.String(
        required=True, validate=ma.validate.OneOf([t.value for t in PayoutType])
    )
    amount = Amount(required=True, description="Smallest unit, > 0.")
    currency = ma.fields.String(
        required=True,
        validate=ma.validate.Length(min=3, max=8),
        metadata={"enum": [BRL, CRYPTO_CURRENCY], "description": "BRL; USDT for CRYPTO"},
    )
    pixKey = Text(validate=ma.validate.Length(max=77))
    pixKeyType = ma.fields.String(validate=ma.validate.OneOf([t.value for t in PixKeyType]))
    bankAccount = ma.fields.Nested(BankAccountInputSchema)
    cryptoAddress = ma.fields.String(
        validate=Pattern.whole(BEP20_ADDRESS),
        metadata={"description": "BEP-20: 0x and 40 hex digits"},
    )
    cryptoNetwork = ma.fields.String(metadata={"enum": [CRYPTO_NETWORK]})
    cryptoCurrency = ma.fields.String(metadata={"enum": [CRYPTO_CURRENCY]})
    description = Text(allow_none=True, validate=ma.validate.Length(max=MAX_DESCRIPTION))
    idempotencyKey = IdempotencyKey(
        description="Required; a retry with the same key returns the first answer."
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
    page = QueryInteger(minimum=1, maximum=MAX_PAGE_OR_OFFSET, load_default=1)
    limit = QueryInteger(minimum=1, maximum=MAX_PAGE_LIMIT, load_default=DEFAULT_PAGE_LIMIT)
    status = ma.fields.String(validate=ma.validate.OneOf([s.value for s in PayoutStatus]))
    mode = ma.fields.String(
        validate=ma.validate.OneOf(["live", "test"]),
        metadata={"description": "Only live or only test payouts; both when omitted."},
    )


class WithdrawalPageSchema(NumberedPageSchema):
    data = ma.fields.List(ma.fields.Nested(PayoutSchema))


class RejectionSchema(ma.Schema):
    reason = Text(load_default=None, allow_none=True, validate=ma.validate.Length(max=500))
