"""Request and response schemas of the payment routes, field for field as the contract's
"Payment operations" section. Types and shapes are checked here (400 with `details`); the
rules between fields are the services', so the dashboard forms get them too."""

import marshmallow as ma

from app.api.schemas.fields import DateBoundParam, QueryArgsSchema, QueryInteger, StrictBoolean
from app.formats.payments import STATUSES, ListedPaymentSchema, RefundSchema
from app.models import RefundStrategy
from app.services.payment_stats import MAX_DAYS
from app.services.payments import (
    DEFAULT_PAGE_LIMIT,
    MAX_CUSTOMER_DOCUMENT,
    MAX_CUSTOMER_ID,
    MAX_CUSTOMER_NAME,
    MAX_PAGE,
    MAX_PAGE_LIMIT,
    MAX_URL_LENGTH,
    METHODS,
    SORTABLE,
    NewPayment,
)
from app.services.refunds import MAX_REASON, RefundOrder

IDEMPOTENCY_KEY = {
    "required": True,
    "validate": ma.validate.Length(min=8, max=128),
    "metadata": {"description": "Required, 8-128 characters; a replay returns the original."},
}
AMOUNT_RULES = {"strict": True, "validate": ma.validate.Range(min=1)}


class PaymentCreateSchema(ma.Schema):
    amount = ma.fields.Integer(
        required=True,
        **AMOUNT_RULES,
        metadata={"error_code": "invalid_amount", "description": "Smallest unit, > 0."},
    )
    currency = ma.fields.String(
        load_default="BRL",
        validate=ma.validate.Length(min=3, max=8),
        metadata={"description": "BRL, EUR, USD, USDT…"},
    )
    paymentMethods = ma.fields.List(
        ma.fields.String(validate=ma.validate.OneOf(METHODS)),
        required=True,
        validate=ma.validate.Length(min=1),
    )
    customerId = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=MAX_CUSTOMER_ID))
    customerName = ma.fields.String(
        allow_none=True, validate=ma.validate.Length(max=MAX_CUSTOMER_NAME)
    )
    customerDocument = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=MAX_CUSTOMER_DOCUMENT),
        metadata={"description": "CPF, CNPJ, NIF or another tax id."},
    )
    customerEmail = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=254))
    metadata = ma.fields.Dict(
        keys=ma.fields.String(),
        load_default=dict,
        metadata={"description": "returnUrl (CREDIT_CARD); phone in E.164 (required by MBWAY)."},
    )
    webhookUrl = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=MAX_URL_LENGTH),
        metadata={"description": "URL of one of the account's active webhook endpoints."},
    )
    idempotencyKey = ma.fields.String(**IDEMPOTENCY_KEY)

    @ma.post_load
    def _to_new_payment(self, data, **kwargs) -> NewPayment:
        return NewPayment(
            amount=data["amount"],
            payment_methods=data["paymentMethods"],
            currency=data["currency"],
            customer_id=data.get("customerId"),
            customer_name=data.get("customerName"),
            customer_document=data.get("customerDocument"),
            customer_email=data.get("customerEmail"),
            metadata=data["metadata"],
            webhook_url=data.get("webhookUrl"),
        )


class PaymentQuerySchema(QueryArgsSchema):
    page = QueryInteger(load_default=1, validate=ma.validate.Range(min=1, max=MAX_PAGE))
    limit = QueryInteger(
        load_default=DEFAULT_PAGE_LIMIT, validate=ma.validate.Range(min=1, max=MAX_PAGE_LIMIT)
    )
    status = ma.fields.String(validate=ma.validate.OneOf(STATUSES))
    startDate = DateBoundParam(
        end=False, metadata={"description": "Inclusive, on createdAt; a date means 00:00Z."}
    )
    endDate = DateBoundParam(
        end=True, metadata={"description": "Inclusive, on createdAt; a date means its whole day."}
    )
    sortBy = ma.fields.String(load_default="createdAt", validate=ma.validate.OneOf(SORTABLE))
    sortOrder = ma.fields.String(load_default="desc", validate=ma.validate.OneOf(["asc", "desc"]))


class PaymentPageSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(ListedPaymentSchema))
    total = ma.fields.Integer()
    page = ma.fields.Integer()
    limit = ma.fields.Integer()


class StatsQuerySchema(QueryArgsSchema):
    days = QueryInteger(
        load_default=7,
        validate=ma.validate.Range(min=1, max=MAX_DAYS),
        metadata={"description": "Business days in America/Sao_Paulo, today included."},
    )


class MetricsQuerySchema(StatsQuerySchema):
    currency = ma.fields.String(validate=ma.validate.Regexp(r"^[A-Za-z0-9]{3,8}$"))


class CurrencyVolumeSchema(ma.Schema):
    currency = ma.fields.String()
    volume = ma.fields.Integer()
    count = ma.fields.Integer()


class DailyVolumeSchema(ma.Schema):
    date = ma.fields.String(metadata={"description": "YYYY-MM-DD in America/Sao_Paulo."})
    currencies = ma.fields.Dict(keys=ma.fields.String(), values=ma.fields.Integer())


class MethodVolumeSchema(ma.Schema):
    method = ma.fields.String()
    currency = ma.fields.String()
    volume = ma.fields.Integer()
    count = ma.fields.Integer()


class StatsSchema(ma.Schema):
    totalTransactions = ma.fields.Integer()
    paidTransactions = ma.fields.Integer()
    todayTransactions = ma.fields.Integer()
    successRate = ma.fields.Float(metadata={"description": "paid / total, 0 to 1."})
    volumeByCurrency = ma.fields.List(ma.fields.Nested(CurrencyVolumeSchema))
    todayVolumeByCurrency = ma.fields.Dict(keys=ma.fields.String(), values=ma.fields.Integer())
    dailyVolume = ma.fields.List(ma.fields.Nested(DailyVolumeSchema))
    methodBreakdown = ma.fields.List(ma.fields.Nested(MethodVolumeSchema))


class MetricsSchema(ma.Schema):
    window = ma.fields.Dict()
    currency = ma.fields.String(allow_none=True)
    funnel = ma.fields.Dict()
    byMethod = ma.fields.List(ma.fields.Dict())
    outcomes = ma.fields.Dict()
    medianTimeToPaySeconds = ma.fields.Integer(allow_none=True)
    volume = ma.fields.List(ma.fields.Dict())


class RefundCreateSchema(ma.Schema):
    idempotencyKey = ma.fields.String(**IDEMPOTENCY_KEY)
    amount = ma.fields.Integer(
        **AMOUNT_RULES,
        metadata={"error_code": "invalid_amount", "description": "Omitted means the rest."},
    )
    reason = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=MAX_REASON))
    strategy = ma.fields.String(validate=ma.validate.OneOf([s.value for s in RefundStrategy]))
    passFeeToTenant = StrictBoolean()
    destinationKey = ma.fields.String(validate=ma.validate.Length(max=77))

    @ma.post_load
    def _to_order(self, data, **kwargs) -> RefundOrder:
        return RefundOrder(
            amount=data.get("amount"),
            reason=data.get("reason"),
            strategy=data.get("strategy"),
            pass_fee_to_tenant=data.get("passFeeToTenant"),
            destination_key=data.get("destinationKey"),
        )


class RefundListSchema(ma.Schema):
    data = ma.fields.List(ma.fields.Nested(RefundSchema))
    total = ma.fields.Integer()


class ResendSchema(ma.Schema):
    resent = ma.fields.Boolean()
    status = ma.fields.String()


class ProviderStatusSchema(ma.Schema):
    localStatus = ma.fields.String()
    provider = ma.fields.String(allow_none=True)
    providerTransactionId = ma.fields.String(allow_none=True)
    providerStatus = ma.fields.String(allow_none=True)
    rawResponse = ma.fields.Dict(allow_none=True)
    error = ma.fields.String(metadata={"enum": ["TRANSACTION_HAS_NO_PROVIDER_REFERENCE"]})


class ReceiptSchema(ma.Schema):
    contentType = ma.fields.String(metadata={"enum": ["application/pdf"]})
    base64 = ma.fields.String()


class SandboxMethodPaymentSchema(ma.Schema):
    method = ma.fields.String(
        validate=ma.validate.OneOf(METHODS),
        metadata={"description": "Required when the payment offers several methods."},
    )
    approved = StrictBoolean(
        load_default=True, metadata={"description": "CREDIT_CARD: false makes the issuer decline."}
    )
