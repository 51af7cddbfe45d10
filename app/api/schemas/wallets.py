"""Wallet schemas, field for field as the contract's "Wallet balance" section."""

import marshmallow as ma

from app.api.schemas.fields import Pattern, QueryArgsSchema
from app.models.constants import WALLET_CURRENCY_CODE


class BalanceQuerySchema(QueryArgsSchema):
    currency = ma.fields.String(
        validate=Pattern.whole(WALLET_CURRENCY_CODE, error="A currency code: 3 to 8 letters."),
        metadata={"description": "ISO 4217 (or a crypto ticker); answers the flat shape."},
    )


class CurrencyBalanceSchema(ma.Schema):
    """Dumped from `services.wallets.Balance`."""

    currency = ma.fields.String()
    available = ma.fields.Integer()
    pending = ma.fields.Integer()
    total = ma.fields.Integer()


class BalanceSchema(ma.Schema):
    """Both shapes: the full one, or the flat one (no total, retained, balances, primary)
    when `currency` is given."""

    available = ma.fields.Integer()
    pending = ma.fields.Integer()
    total = ma.fields.Integer(metadata={"description": "available + pending (full shape)."})
    retained = ma.fields.Integer(metadata={"description": "Held by disputes (full shape)."})
    currency = ma.fields.String()
    next_release_at = ma.fields.DateTime(allow_none=True)
    next_release_amount = ma.fields.Integer(allow_none=True)
    balances = ma.fields.List(
        ma.fields.Nested(CurrencyBalanceSchema), metadata={"description": "Full shape only."}
    )
    primary = ma.fields.Nested(CurrencyBalanceSchema, metadata={"description": "Full shape only."})


class WalletSchema(ma.Schema):
    currency = ma.fields.String()
    walletType = ma.fields.String(attribute="wallet_type")
    balance = ma.fields.Integer(attribute="available")
    pendingBalance = ma.fields.Integer(attribute="pending")
