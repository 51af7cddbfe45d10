"""The public Charge (`object: charge`), built field by field from an allowlist.

No internal id, provider name, fee, cost or raw provider payload can appear: only the keys
`charge_fields` writes are ever read, and they are the keys `ChargeSchema` declares.
"""

from datetime import date
from decimal import Decimal

import marshmallow as ma
from flask import current_app

from app.models import DISPUTED_STATUSES, Transaction, TransactionStatus
from app.models.base import utcnow
from app.pix import due

CHARGE_ID_PREFIX = "ch_"

PUBLIC_STATUS = {
    TransactionStatus.PENDING: "pending",
    TransactionStatus.WAITING_PAYMENT: "pending",
    TransactionStatus.PROCESSING: "processing",
    TransactionStatus.PAID: "paid",
    TransactionStatus.APPROVED: "paid",
    TransactionStatus.REFUSED: "failed",
    TransactionStatus.CANCELLED: "cancelled",
    TransactionStatus.EXPIRED: "expired",
    TransactionStatus.REFUNDED: "refunded",
    **dict.fromkeys(sorted(DISPUTED_STATUSES), "disputed"),
}
PUBLIC_STATUSES = tuple(dict.fromkeys(PUBLIC_STATUS.values()))


def statuses_for(public_status: str) -> set[TransactionStatus]:
    """The transaction statuses behind a public one (`pending` → PENDING, WAITING_PAYMENT)."""
    return {status for status, public in PUBLIC_STATUS.items() if public == public_status}


def charge_id(transaction: Transaction) -> str:
    return CHARGE_ID_PREFIX + transaction.id


def raw_id(any_id: str) -> str:
    """`ch_<raw>` or `<raw>` → `<raw>`."""
    return any_id.removeprefix(CHARGE_ID_PREFIX)


def checkout_url(transaction: Transaction) -> str:
    return f"{current_app.config['PUBLIC_BASE_URL']}/checkout/{transaction.id}"


def qr_code_url(transaction: Transaction) -> str:
    base = current_app.config["PUBLIC_BASE_URL"]
    return f"{base}/v1/pix/locations/{transaction.pix_location_id}/qr.png"


def charge_fields(transaction: Transaction) -> dict:
    """The allowlisted values of a charge, before `ChargeSchema` types them."""
    fields = {
        "id": charge_id(transaction),
        "object": "charge",
        "amount": transaction.amount,
        "currency": transaction.currency,
        "status": PUBLIC_STATUS[transaction.status],
        "payment_method": (transaction.paid_with or transaction.payment_methods[0]).lower(),
        "customer": {
            "name": transaction.customer_name,
            "document": transaction.customer_document,
            "email": transaction.customer_email,
            "phone": transaction.customer_phone,
        },
        "pix": _pix_fields(transaction),
        "checkout_url": checkout_url(transaction),
        "settlement": _settlement_fields(transaction),
        "metadata": transaction.metadata_,
        "created_at": transaction.created_at,
    }
    if transaction.expected_payer_tax_id:
        fields["expected_payer_tax_id"] = transaction.expected_payer_tax_id
    if transaction.due_terms is not None:
        fields["due"] = due_fields(transaction)
    return fields


def due_fields(transaction: Transaction) -> dict:
    """The terms as the merchant sent them, the last day a Pix is taken, and the amount
    asked on the day it was paid, or today while it awaits payment (`due.shown_amount_due`)."""
    terms = due.from_json(transaction.due_terms)
    breakdown = due.shown_amount_due(transaction, utcnow())
    if isinstance(terms.discounts, tuple):
        discounts = [{"until": tier.until.isoformat(), **_rule(tier)} for tier in terms.discounts]
    else:
        discounts = terms.discounts and _rule(terms.discounts)
    return {
        "date": terms.date,
        "days_valid_after": terms.days_valid_after,
        "fine": terms.fine and _rule(terms.fine),
        "interest": terms.interest and _rule(terms.interest),
        "discounts": discounts,
        "rebate": terms.rebate and _rule(terms.rebate),
        "original_amount": transaction.due_original_amount,
        "last_payable_date": due.last_payable_day(terms),
        "amount_due": breakdown
        and {
            "date": breakdown.day,
            "original": breakdown.original,
            "rebate": breakdown.rebate,
            "discount": breakdown.discount,
            "fine": breakdown.fine,
            "interest": breakdown.interest,
            "total": breakdown.total,
        },
    }


def _rule(rule) -> dict:
    value = float(rule.value) if isinstance(rule.value, Decimal) else rule.value
    return {"type": rule.type, "value": value}


def _pix_fields(transaction: Transaction) -> dict | None:
    if not transaction.pix_br_code:
        return None
    pix = {
        "br_code": transaction.pix_br_code,
        "qr_code_url": qr_code_url(transaction),
        "expires_at": transaction.pix_expires_at,
    }
    if transaction.pix_txid:
        pix["txid"] = transaction.pix_txid
    return pix


def _settlement_fields(transaction: Transaction) -> dict:
    if transaction.end_to_end_id and transaction.paid_at:
        return {"end_to_end_id": transaction.end_to_end_id}
    return {}


class CustomerSchema(ma.Schema):
    name = ma.fields.String(allow_none=True)
    document = ma.fields.String(allow_none=True)
    email = ma.fields.String(allow_none=True)
    phone = ma.fields.String(allow_none=True)


class PixSchema(ma.Schema):
    br_code = ma.fields.String(metadata={"description": "EMV copy-and-paste payload."})
    qr_code_url = ma.fields.String(metadata={"description": "PNG image of the QR code."})
    expires_at = ma.fields.DateTime()
    txid = ma.fields.String(metadata={"description": "Present when the provider bound one."})


class SettlementSchema(ma.Schema):
    end_to_end_id = ma.fields.String(metadata={"description": "Pix end-to-end id, once paid."})


class DueRuleSchema(ma.Schema):
    type = ma.fields.String()
    value = ma.fields.Raw(
        metadata={"type": "number", "description": "Centavos, or a number of percent."}
    )


# A discount as the document shows it (inline: the field takes a list or an object).
DUE_RULE_DOCUMENT = {
    "type": "object",
    "properties": {
        "until": {"type": "string", "format": "date"},
        "type": {"type": "string"},
        "value": {"type": "number"},
    },
}


class AmountDueSchema(ma.Schema):
    date = ma.fields.Date(metadata={"description": "The São Paulo day it applies to."})
    original = ma.fields.Integer()
    rebate = ma.fields.Integer()
    discount = ma.fields.Integer()
    fine = ma.fields.Integer()
    interest = ma.fields.Integer()
    total = ma.fields.Integer(metadata={"description": "What a Pix made that day must carry."})


class DueSchema(ma.Schema):
    date = ma.fields.Date()
    days_valid_after = ma.fields.Integer()
    fine = ma.fields.Nested(DueRuleSchema, allow_none=True)
    interest = ma.fields.Nested(DueRuleSchema, allow_none=True)
    discounts = ma.fields.Raw(
        allow_none=True,
        metadata={
            "description": "A list of dated tiers, or one discount per day of early payment.",
            "oneOf": [
                {"type": "array", "items": DUE_RULE_DOCUMENT | {"required": ["until"]}},
                DUE_RULE_DOCUMENT,
            ],
        },
    )
    rebate = ma.fields.Nested(DueRuleSchema, allow_none=True)
    original_amount = ma.fields.Integer()
    last_payable_date = ma.fields.Date()
    amount_due = ma.fields.Nested(
        AmountDueSchema,
        allow_none=True,
        metadata={
            "description": "On the day it was paid; while it awaits payment, today; null "
            "when it can no longer be paid (expired, cancelled, held for review)."
        },
    )


class ChargeSchema(ma.Schema):
    """The Charge as the API documents it. One charge dumps through `charge_object`, which
    a test holds equal to what this schema's fields make of it; lists of charges go through
    the fields."""

    id = ma.fields.String()
    object = ma.fields.String(metadata={"enum": ["charge"]})
    amount = ma.fields.Integer()
    currency = ma.fields.String()
    status = ma.fields.String(metadata={"enum": list(PUBLIC_STATUSES)})
    payment_method = ma.fields.String(
        metadata={"description": "`pix` for charges; a payment's method, in lower case."}
    )
    customer = ma.fields.Nested(CustomerSchema)
    pix = ma.fields.Nested(PixSchema, allow_none=True)
    checkout_url = ma.fields.String()
    settlement = ma.fields.Nested(SettlementSchema)
    expected_payer_tax_id = ma.fields.String()
    due = ma.fields.Nested(DueSchema, metadata={"description": "A charge with a due date."})
    metadata = ma.fields.Dict()
    created_at = ma.fields.DateTime()

    @ma.pre_dump
    def _from_transaction(self, value, **kwargs):
        return charge_fields(value) if isinstance(value, Transaction) else value

    def dump(self, obj, *, many: bool | None = None):
        if isinstance(obj, Transaction) and not (self.many if many is None else many):
            return charge_object(obj)
        return super().dump(obj, many=many)


def charge_object(transaction: Transaction) -> dict:
    """The public Charge as JSON-ready data, as API answers and webhook events carry it:
    `charge_fields` with its times and days in ISO 8601, all that `ChargeSchema`'s fields do
    to them. A plain function, because marshmallow's walk of the nested fields was about 5 %
    of a GET's interpreter time, and a creation dumps its charge twice (issue 22)."""
    return _json_ready(charge_fields(transaction))


def _json_ready(value):
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_ready(item) for item in value]
    if isinstance(value, date):  # a datetime too
        return value.isoformat()
    return value
