"""The public Withdrawal (payout) object, and the legacy `withdrawal.*` event data.

The same object is the REST answer on `/v1/withdrawals` and `data.object` of `payout.*`
events. The destination fields of the payout's own type appear; the others are left out.
"""

from datetime import datetime

import marshmallow as ma

from app.models import Withdrawal, WithdrawalStatus, WithdrawalType


def payout_fields(withdrawal: Withdrawal) -> dict:
    fields = {
        "id": withdrawal.id,
        "status": str(withdrawal.status),
        "type": str(withdrawal.type),
        "amount": withdrawal.amount,
        "currency": withdrawal.currency,
        "fee": withdrawal.fee,
        "netAmount": withdrawal.net_amount,
        "description": withdrawal.description,
        "mode": str(withdrawal.mode),
        "createdAt": withdrawal.created_at,
        "completedAt": withdrawal.completed_at,
    }
    if withdrawal.type is WithdrawalType.PIX:
        fields |= {"pixKey": withdrawal.pix_key, "pixKeyType": withdrawal.pix_key_type}
    elif withdrawal.type is WithdrawalType.TED:
        fields["bankAccount"] = withdrawal.bank_account
    else:
        fields |= {
            "cryptoAddress": withdrawal.crypto_address,
            "cryptoNetwork": withdrawal.crypto_network,
            "cryptoCurrency": withdrawal.crypto_currency,
        }
    if withdrawal.status in (WithdrawalStatus.FAILED, WithdrawalStatus.REJECTED):
        fields["failureReason"] = withdrawal.failure_reason
    return fields


class BankAccountSchema(ma.Schema):
    bankCode = ma.fields.String()
    agency = ma.fields.String()
    account = ma.fields.String()
    holderName = ma.fields.String()
    holderDocument = ma.fields.String()


class PayoutSchema(ma.Schema):
    id = ma.fields.String()
    status = ma.fields.String(metadata={"enum": [s.value for s in WithdrawalStatus]})
    type = ma.fields.String(metadata={"enum": [t.value for t in WithdrawalType]})
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
    def _from_withdrawal(self, value, **kwargs):
        return payout_fields(value) if isinstance(value, Withdrawal) else value


def payout_object(withdrawal: Withdrawal) -> dict:
    return PayoutSchema().dump(withdrawal)


def withdrawal_event_data(
    withdrawal: Withdrawal, previous: WithdrawalStatus | None, occurred_at: datetime
) -> dict:
    return {
        "withdrawalId": withdrawal.id,
        "amount": withdrawal.amount,
        "fee": withdrawal.fee,
        "netAmount": withdrawal.net_amount,
        "status": str(withdrawal.status),
        "previousStatus": str(previous) if previous else None,
        "type": str(withdrawal.type),
        "occurredAt": occurred_at.isoformat(),
    }
