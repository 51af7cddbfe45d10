"""The public Withdrawal (payout) object, and the legacy `withdrawal.*` event data.

The same object is the REST answer on `/v1/withdrawals` and `data.object` of `payout.*`
events. The destination fields of the payout's own type appear; the others are left out.
"""

from datetime import datetime

import marshmallow as ma

from app.models import Payout, PayoutStatus, PayoutType


def payout_fields(payout: Payout) -> dict:
    fields = {
        "id": payout.id,
        "status": str(payout.status),
        "type": str(payout.type),
        "amount": payout.amount,
        "currency": payout.currency,
        "fee": payout.fee,
        "netAmount": payout.net_amount,
        "description": payout.description,
        "mode": str(payout.mode),
        "createdAt": payout.created_at,
        "completedAt": payout.completed_at,
    }
    if payout.type is PayoutType.PIX:
        fields |= {"pixKey": payout.pix_key, "pixKeyType": payout.pix_key_type}
    elif payout.type is PayoutType.TED:
        fields["bankAccount"] = payout.bank_account
    else:
        fields |= {
            "cryptoAddress": payout.crypto_address,
            "cryptoNetwork": payout.crypto_network,
            "cryptoCurrency": payout.crypto_currency,
        }
    if payout.status in (PayoutStatus.FAILED, PayoutStatus.REJECTED):
        fields["failureReason"] = payout.failure_reason
    return fields


class BankAccountSchema(ma.Schema):
    bankCode = ma.fields.String()
    agency = ma.fields.String()
    account = ma.fields.String()
    holderName = ma.fields.String()
    holderDocument = ma.fields.String()


class PayoutSchema(ma.Schema):
    id = ma.fields.String()
    status = ma.fields.String(metadata={"enum": [s.value for s in PayoutStatus]})
    type = ma.fields.String(metadata={"enum": [t.value for t in PayoutType]})
    amount = ma.fields.Integer()
    currency = ma.fields.String()
    fee = ma.fields.Integer()
    netAmount = ma.fields.Integer(metadata={"description": "amount - fee"})
    description = ma.fields.String(allow_none=True)
    mode = ma.fields.String(metadata={"enum": ["live", "test"]})
    pixKey = ma.fields.String()
    pixKeyType = ma.fields.String()
    bankAccount = ma.fields.Nested(BankAccountSchema)
    cryptoAddress = ma.fields.String()
    cryptoNetwork = ma.fields.String()
    cryptoCurrency = ma.fields.String()
    failureReason = ma.fields.String(allow_none=True)
    createdAt = ma.fields.DateTime()
    completedAt = ma.fields.DateTime(allow_none=True)

    @ma.pre_dump
    def _from_payout(self, value, **kwargs):
        return payout_fields(value) if isinstance(value, Payout) else value


# One instance for every dump: building a schema copies its fields, and its nested schemas
# are built on first use; dumping leaves the instance unchanged.
_PAYOUT_SCHEMA = PayoutSchema()


def payout_object(payout: Payout) -> dict:
    return _PAYOUT_SCHEMA.dump(payout)


def withdrawal_event_data(
    payout: Payout, previous: PayoutStatus | None, occurred_at: datetime
) -> dict:
    return {
        "withdrawalId": payout.id,
        "amount": payout.amount,
        "fee": payout.fee,
        "netAmount": payout.net_amount,
        "status": str(payout.status),
        "previousStatus": str(previous) if previous else None,
        "type": str(payout.type),
        "occurredAt": occurred_at.isoformat(),
    }
