"""The transaction wire format (`/v1/payments`), its refunds, and the legacy `payment.*`
event data. Built from allowlists like the Charge: only the keys written here go out, and
fields that do not apply to a transaction's methods are null.
"""

from datetime import datetime

import marshmallow as ma
from flask import current_app
from flask_babel import lazy_gettext as _l

from app.formats.charges import charge_id, qr_code_url
from app.models import SETTLED_STATUSES, Origin, Refund, Transaction, TransactionStatus

TRANSACTION_ID_PREFIX = "tx_"
METHOD_LABELS = {  # how pages and documents name each method (the others are brand names)
    "PIX": "Pix",
    "CREDIT_CARD": _l("Credit card"),
    "MBWAY": "MB WAY",
    "MULTIBANCO": "Multibanco",
    "BOLETO": "Boleto",
    "CRYPTO": _l("Crypto"),
}
STATUSES = [status.value for status in TransactionStatus]


def transaction_id(transaction: Transaction) -> str:
    """The id the merchant got at creation: `ch_…` from /v1/charges, the raw id from payments."""
    if transaction.origin is Origin.CHARGES:
        return charge_id(transaction)
    return transaction.id


def boleto_pdf_url(transaction: Transaction) -> str:
    return f"{current_app.config['PUBLIC_BASE_URL']}/checkout/{transaction.id}/boleto.pdf"


def payment_created_fields(transaction: Transaction) -> dict:
    """The create answer: exactly the contract's create shape."""
    return {
        "id": transaction.id,
        "status": str(transaction.status),
        "amount": transaction.amount,
        "currency": transaction.currency,
        "paymentMethods": list(transaction.payment_methods),
        "customerName": transaction.customer_name,
        "customerDocument": transaction.customer_document,
        "customerEmail": transaction.customer_email,
        "metadata": transaction.metadata_,
        "createdAt": transaction.created_at,
    }


def payment_fields(transaction: Transaction, *, listed: bool = False) -> dict:
    """The get shape; in lists the id carries the `tx_` prefix."""
    pix = transaction.pix_br_code is not None
    boleto = transaction.boleto_barcode is not None
    return {
        "id": (TRANSACTION_ID_PREFIX if listed else "") + transaction.id,
        "status": str(transaction.status),
        "amount": transaction.amount,
        "currency": transaction.currency,
        "paymentMethods": list(transaction.payment_methods),
        "paidWith": transaction.paid_with,
        "pixQrCode": qr_code_url(transaction) if pix else None,
        "pixCopyPaste": transaction.pix_br_code,
        "pixExpiresAt": transaction.pix_expires_at,
        "cardRedirectUrl": transaction.card_redirect_url,
        "mbEntity": transaction.mb_entity,
        "mbReference": transaction.mb_reference,
        "mbExpiresAt": transaction.mb_expires_at,
        "boletoBarcode": transaction.boleto_barcode,
        "boletoLine": transaction.boleto_line,
        "boletoPdfUrl": boleto_pdf_url(transaction) if boleto else None,
        "boletoExpiresAt": transaction.boleto_expires_at,
        "cryptoAddress": transaction.crypto_address,
        "cryptoAmount": transaction.crypto_amount,
        "cryptoNetwork": transaction.crypto_network,
        "cryptoCurrency": transaction.crypto_currency,
        "providerFee": transaction.provider_fee,
        "platformFee": transaction.platform_fee,
        "netAmount": transaction.net_amount,
        "metadata": transaction.metadata_,
        "createdAt": transaction.created_at,
        "paidAt": transaction.paid_at,
    }


def refund_fields(refund: Refund, transaction: Transaction) -> dict:
    return {
        "id": refund.id,
        "transactionId": transaction_id(transaction),
        "amount": refund.amount,
        "currency": refund.currency,
        "status": str(refund.status),
        "reason": refund.reason,
        "pendingReason": str(refund.pending_reason) if refund.pending_reason else None,
        "createdAt": refund.created_at,
    }


def payment_event_data(
    transaction: Transaction, previous_status: TransactionStatus | None, occurred_at: datetime
) -> dict:
    data = {
        "transactionId": transaction_id(transaction),
        "amount": transaction.amount,
        "status": str(transaction.status),
        "previousStatus": str(previous_status) if previous_status else None,
        "occurredAt": occurred_at.isoformat(),
    }
    if transaction.customer_id is not None:
        data["customerId"] = transaction.customer_id  # the contract: "echoed in webhooks"
    if transaction.status in SETTLED_STATUSES:
        data |= {
            "paidWith": transaction.paid_with,
            "providerFee": transaction.provider_fee,
            "platformFee": transaction.platform_fee,
            "netAmount": transaction.net_amount,
        }
    return data


def refund_event_data(refund: Refund, refunded_total: int) -> dict:
    """What `payment.refunded` adds to the payment data: which refund, and the total so far."""
    return {"refundId": refund.id, "refundAmount": refund.amount, "refundedAmount": refunded_total}


_NULLABLE = {"allow_none": True}


class PaymentCreatedSchema(ma.Schema):
    id = ma.fields.String()
    status = ma.fields.String(metadata={"enum": STATUSES})
    amount = ma.fields.Integer()
    currency = ma.fields.String()
    paymentMethods = ma.fields.List(ma.fields.String())
    customerName = ma.fields.String(**_NULLABLE)
    customerDocument = ma.fields.String(**_NULLABLE)
    customerEmail = ma.fields.String(**_NULLABLE)
    metadata = ma.fields.Dict()
    createdAt = ma.fields.DateTime()

    @ma.pre_dump
    def _from_transaction(self, value, **kwargs):
        return payment_created_fields(value) if isinstance(value, Transaction) else value


class PaymentSchema(ma.Schema):
    id = ma.fields.String(metadata={"description": "Raw id; `tx_` + raw id in lists."})
    status = ma.fields.String(metadata={"enum": STATUSES})
    amount = ma.fields.Integer()
    currency = ma.fields.String()
    paymentMethods = ma.fields.List(ma.fields.String())
    paidWith = ma.fields.String(**_NULLABLE)
    pixQrCode = ma.fields.String(
        **_NULLABLE, metadata={"description": "Address of the QR code's PNG image."}
    )
    pixCopyPaste = ma.fields.String(**_NULLABLE)
    pixExpiresAt = ma.fields.DateTime(**_NULLABLE)
    cardRedirectUrl = ma.fields.String(**_NULLABLE)
    mbEntity = ma.fields.String(**_NULLABLE)
    mbReference = ma.fields.String(**_NULLABLE)
    mbExpiresAt = ma.fields.DateTime(**_NULLABLE)
    boletoBarcode = ma.fields.String(**_NULLABLE)
    boletoLine = ma.fields.String(**_NULLABLE)
    boletoPdfUrl = ma.fields.String(**_NULLABLE)
    boletoExpiresAt = ma.fields.DateTime(**_NULLABLE)
    cryptoAddress = ma.fields.String(**_NULLABLE)
    cryptoAmount = ma.fields.String(**_NULLABLE)
    cryptoNetwork = ma.fields.String(**_NULLABLE)
    cryptoCurrency = ma.fields.String(**_NULLABLE)
    providerFee = ma.fields.Integer(**_NULLABLE)
    platformFee = ma.fields.Integer(**_NULLABLE)
    netAmount = ma.fields.Integer(**_NULLABLE)
    metadata = ma.fields.Dict()
    createdAt = ma.fields.DateTime()
    paidAt = ma.fields.DateTime(**_NULLABLE)

    @ma.pre_dump
    def _from_transaction(self, value, **kwargs):
        return payment_fields(value) if isinstance(value, Transaction) else value


class ListedPaymentSchema(PaymentSchema):
    """A list item: the id carries the `tx_` prefix."""

    @ma.pre_dump
    def _from_transaction(self, value, **kwargs):
        return payment_fields(value, listed=True) if isinstance(value, Transaction) else value


class RefundSchema(ma.Schema):
    id = ma.fields.String()
    transactionId = ma.fields.String()
    amount = ma.fields.Integer()
    currency = ma.fields.String()
    status = ma.fields.String(metadata={"enum": ["PENDING", "IN_PROGRESS", "REFUNDED", "FAILED"]})
    reason = ma.fields.String(**_NULLABLE)
    pendingReason = ma.fields.String(
        **_NULLABLE,
        metadata={
            "enum": ["charge_pending", "insufficient_funds", None],
            "description": "Why a PENDING refund waits for money (null once funded): "
            "`charge_pending`, the wallet's unreleased settlements will cover it; "
            "`insufficient_funds`, they do not either. It is sent as soon as funds cover it, "
            "and can be cancelled until then.",
        },
    )
    createdAt = ma.fields.DateTime()
