"""Request and response schemas of the payment routes, field for field as the contract's
"Payment operations" section. Types and shapes are checked here (400 with `details`); the
rules between fields are the services', so the dashboard forms get them too."""

import marshmallow as ma

from app.api.schemas.charges import METADATA_RULE
from app.api.schemas.fields import (
    Amount,
    DateBoundParam,
    EmailAddress,
    IdempotencyKey,
    NumberedPageSchema,
    Pattern,
    QueryArgsSchema,
    QueryInteger,
    StrictBoolean,
    Text,
)
from app.formats.payments import STATUSES, ListedPaymentSchema, RefundSchema
from app.models import RefundStrategy
from app.models.base import MAX_PAGE_OR_OFFSET
from app.models.constants import PAYMENT_CURRENCY_CODE
from app.services.transactions.charges import MAX_AMOUNT
from app.services.transactions.payment_listing import DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, SORTABLE
from app.services.transactions.payment_stats import MAX_DAYS
from app.services.transactions.payments import (
    MAX_CUSTOMER_DOCUMENT,
    MAX_CUSTOMER_ID,
    MAX_CUSTOMER_NAME,
    MAX_URL_LENGTH,
    METHODS,
    NewPayment,
)
from app.services.transactions.refunds import MAX_REASON, RefundOrder

# Letters and digits once the formatting (. - / and spaces) is removed; blank means none.
CUSTOMER_DOCUMENT = r"^(?: *|[ ./-]*[A-Za-z0-9][A-Za-z0-9 ./-]*)$"
IDEMPOTENCY_KEY_RULE = "Required, 8-128 characters; a replay returns the original."


class PaymentCreateSchema(ma.Schema):
    amount = Amount(required=True, maximum=MAX_AMOUNT, description="Smallest unit.")
    currency = ma.fields.String(
        load_default="BRL",
        validate=Pattern.whole(
            PAYMENT_CURRENCY_CODE, error="A currency code: 3 to 8 letters or digits."
        ),
        metadata={"description": "BRL, EUR, USD, USDT…"},
    )
    paymentMethods = ma.fields.List(
        ma.fields.String(validate=ma.validate.OneOf(METHODS)),
        required=True,
        validate=ma.validate.Length(min=1),
        metadata={"uniqueItems": True},
    )
    customerId = Text(allow_none=True, validate=ma.validate.Length(max=MAX_CUSTOMER_ID))
    customerName = Text(allow_none=True, validate=ma.validate.Length(max=MAX_CUSTOMER_NAME))
    customerDocument = ma.fields.String(
        allow_none=True,
        validate=[
            ma.validate.Length(max=MAX_CUSTOMER_DOCUMENT),
            Pattern(CUSTOMER_DOCUMENT, error="customerDocument holds letters and digits."),
        ],
        metadata={"description": "CPF, CNPJ, NIF or another tax id; . - / and spaces are removed."},
    )
    customerEmail = EmailAddress(allow_none=True)
    metadata = ma.fields.Dict(
        keys=ma.fields.String(),
        load_default=dict,
        metadata={
            "description": f"{METADATA_RULE} returnUrl (CREDIT_CARD) is an absolute http(s) "
            "address; phone is in E.164 (required by MBWAY)."
        },
    )
    webhookUrl = Text(
        allow_none=True,
        validate=ma.validate.Length(max=MAX_URL_LENGTH),
        metadata={
            "description": "Exactly the URL of one of the account's active webhook endpoints."
        },
    )
    idempotencyKey = IdempotencyKey(description=IDEMPOTENCY_KEY_RULE)

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
    page = QueryInteger(minimum=1, maximum=MAX_PAGE_OR_OFFSET, load_default=1)
    limit = QueryInteger(minimum=1, maximum=MAX_PAGE_LIMIT, load_default=DEFAULT_PAGE_LIMIT)
    status = ma.fields.String(validate=ma.validate.OneOf(STATUSES))
    startDate = DateBoundParam(
        end=False, metadata={"description": "Inclusive, on createdAt; a date means 00:00Z."}
    )
    endDate = DateBoundParam(
        end=True, metadata={"description": "Inclusive, on createdAt; a date means its whole day."}
    )
    sortBy = ma.fields.String(load_default="createdAt", validate=ma.validate.OneOf(SORTABLE))
    sortOrder = ma.fields.String(load_default="desc", validate=ma.validate.OneOf(["asc", "desc"]))


class PaymentPageSchema(NumberedPageSchema):
    data = ma.fields.List(ma.fields.Nested(ListedPaymentSchema))


class StatsQuerySchema(QueryArgsSchema):
    days = QueryInteger(
        minimum=1,
        maximum=MAX_DAYS,
        load_default=7,
        metadata={"description": "Business days in America/Sao_Paulo, today included."},
    )


class MetricsQuerySchema(StatsQuerySchema):
    currency = ma.fields.String(validate=Pattern.whole(PAYMENT_CURRENCY_CODE))


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

    def dump(self, obj, *, many: bool | None = None):
        """`payment_stats` builds its answer field for field as declared here (a test holds
        the two equal), so the answer goes out as built: marshmallow's walk of a year's 366
        daily points through nested schemas was a third of what 365 days cost over 7 (issue
        22)."""
        if self.many if many is None else many:
            return super().dump(obj, many=many)
        return obj


class MetricsSchema(ma.Schema):
    window = ma.fields.Dict()
    currency = ma.fields.String(allow_none=True)
    funnel = ma.fields.Dict()
    byMethod = ma.fields.List(ma.fields.Dict())
    outcomes = ma.fields.Dict()
    medianTimeToPaySeconds = ma.fields.Integer(allow_none=True)
    volume = ma.fields.List(ma.fields.Dict())


class RefundCreateSchema(ma.Schema):
    idempotencyKey = IdempotencyKey(description=IDEMPOTENCY_KEY_RULE)
    amount = Amount(description="Omitted means the rest.")
    reason = Text(allow_none=True, validate=ma.validate.Length(max=MAX_REASON))
    strategy = ma.fields.String(validate=ma.validate.OneOf([s.value for s in RefundStrategy]))
    passFeeToTenant = StrictBoolean()
    destinationKey = Text(validate=ma.validate.Length(max=77))

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
