"""Payment operations (apikey): the transaction wire format on `/v1/payments`: create, read,
list, stats and metrics, cancel, refunds, resend webhook, provider status and receipt; and
the sandbox's payment of a test transaction by any method.
"""

import base64

from flask import g

from app.api.caller import committed_for_caller, sandbox_mode
from app.api.idempotency import idempotent
from app.api.pages import numbered_page
from app.api.schemas.payments import (
    MetricsQuerySchema,
    MetricsSchema,
    PaymentCreateSchema,
    PaymentPageSchema,
    PaymentQuerySchema,
    ProviderStatusSchema,
    ReceiptSchema,
    RefundCreateSchema,
    RefundListSchema,
    ResendSchema,
    SandboxMethodPaymentSchema,
    StatsQuerySchema,
    StatsSchema,
)
from app.api.security import ApiKeyView
from app.errors import InvalidRequest
from app.extensions import Blueprint, db
from app.formats.payments import PaymentCreatedSchema, PaymentSchema, RefundSchema, refund_fields
from app.models import Refund, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services import simulated_payer
from app.services.transactions import (
    payment_listing,
    payment_operations,
    payment_stats,
    payments,
    receipts,
    refunds,
)
from app.services.transactions.payment_listing import PaymentQuery

blp = Blueprint(
    "payments", __name__, url_prefix="/v1/payments", description="Payment operations (apikey)"
)
sandbox_payments_blp = Blueprint(
    "sandbox_payments",
    __name__,
    url_prefix="/v1/sandbox/payments",
    description="Sandbox (test-mode keys only)",
)


@blp.route("")
class Payments(ApiKeyView):
    @idempotent("body")
    @blp.arguments(PaymentCreateSchema)
    @blp.response(201, PaymentCreatedSchema)
    @blp.errors(400, 401, 403, 409, 422, 503)
    def post(self, new):
        """Create a payment; its method fields appear on GET once the provider finalises it."""
        return payments.create_payment(g.account_id, g.api_key.mode, new)

    @blp.arguments(PaymentQuerySchema, location="query", unknown="raise")
    @blp.response(200, PaymentPageSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """List transactions a page at a time (ids prefixed tx_)."""
        start, end = query.get("startDate"), query.get("endDate")
        if start and end and start > end:
            raise InvalidRequest("startDate is after endDate.", param="startDate")
        rows, total = payment_listing.list_payments(
            g.account_id,
            g.api_key.mode,
            PaymentQuery(
                page=query["page"],
                limit=query["limit"],
                status=TransactionStatus(query["status"]) if "status" in query else None,
                start=start,
                end=end,
                sort_by=query["sortBy"],
                descending=query["sortOrder"] == "desc",
            ),
        )
        db.session.commit()  # transactions found expired on read
        return numbered_page(rows, total, query)


@blp.route("/stats")
class PaymentStats(ApiKeyView):
    @blp.arguments(StatsQuerySchema, location="query", unknown="raise")
    @blp.response(200, StatsSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """Totals, volume per currency and day, and method breakdown over `days` business
        days (America/Sao_Paulo, today included)."""
        return payment_stats.payment_stats(g.account_id, g.api_key.mode, query["days"], utcnow())


@blp.route("/metrics")
class PaymentMetrics(ApiKeyView):
    @blp.arguments(MetricsQuerySchema, location="query", unknown="raise")
    @blp.response(200, MetricsSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """Conversion funnel (created → awaiting payment → paid, by method), outcome shares,
        median time to pay and volume; see docs/payments.md for every field."""
        currency = query["currency"].upper() if "currency" in query else None
        return payment_stats.payment_metrics(
            g.account_id, g.api_key.mode, query["days"], currency, utcnow()
        )


@blp.route("/<payment_id>")
class PaymentById(ApiKeyView):
    @blp.response(200, PaymentSchema)
    @blp.errors(401, 404)
    def get(self, payment_id):
        """Read a transaction by raw, tx_ or ch_ id."""
        return committed_for_caller(payments.get_payment, payment_id)


@blp.route("/<payment_id>/cancel")
class PaymentCancellation(ApiKeyView):
    @blp.response(200, PaymentSchema)
    @blp.errors(401, 404, 409, 422, 503)
    def post(self, payment_id):
        """Cancel a WAITING_PAYMENT, PENDING or PROCESSING transaction."""
        return committed_for_caller(payments.cancel, payment_id)


@blp.route("/<payment_id>/refund")
class PaymentRefund(ApiKeyView):
    @idempotent("body")
    @blp.arguments(RefundCreateSchema)
    @blp.response(201, RefundSchema)
    @blp.errors(400, 401, 404, 409, 422)
    def post(self, order, payment_id):
        """Refund a PAID or APPROVED transaction, in full or in part."""
        return _refund(refunds.request_refund(g.account_id, g.api_key.mode, payment_id, order))


@blp.route("/<payment_id>/refunds")
class PaymentRefunds(ApiKeyView):
    @blp.response(200, RefundListSchema)
    @blp.errors(401, 404)
    def get(self, payment_id):
        """Every refund of the transaction, newest first: `{data, total}`."""
        payment, rows = committed_for_caller(refunds.list_refunds, payment_id)
        return {"data": [refund_fields(r, payment) for r in rows], "total": len(rows)}


@blp.route("/<payment_id>/refunds/<refund_id>/cancel")
class PaymentRefundCancellation(ApiKeyView):
    @blp.response(200, RefundSchema)
    @blp.errors(401, 404, 409)
    def post(self, payment_id, refund_id):
        """Cancel a refund that still waits for funds (`pendingReason` set): it ends FAILED
        and nothing is debited. A funded refund may already be on its way: 409."""
        return _refund(committed_for_caller(refunds.cancel_refund, payment_id, refund_id))


@blp.route("/<payment_id>/resend-webhook")
class PaymentWebhookResend(ApiKeyView):
    @blp.response(200, ResendSchema)
    @blp.errors(401, 404)
    def post(self, payment_id):
        """Re-emit the current status as a fresh event (a new delivery to every listener)."""
        return committed_for_caller(payment_operations.resend_webhook, payment_id)


@blp.route("/<payment_id>/provider-status")
class PaymentProviderStatus(ApiKeyView):
    @blp.response(200, ProviderStatusSchema)
    @blp.errors(401, 404, 503)
    def get(self, payment_id):
        """The provider's live status next to ours."""
        return committed_for_caller(payment_operations.provider_status, payment_id)


@blp.route("/<payment_id>/receipt")
class PaymentReceipt(ApiKeyView):
    @blp.response(200, ReceiptSchema)
    @blp.errors(401, 404, 409)
    def get(self, payment_id):
        """The PDF receipt of a paid transaction, base64-encoded."""
        pdf = committed_for_caller(receipts.receipt, payment_id)
        return {"contentType": receipts.PDF, "base64": base64.b64encode(pdf).decode()}


@sandbox_payments_blp.route("/<payment_id>/pay")
class SandboxMethodPayment(ApiKeyView):
    @sandbox_payments_blp.arguments(SandboxMethodPaymentSchema, required=False)
    @sandbox_payments_blp.response(200, PaymentSchema)
    @sandbox_payments_blp.errors(400, 401, 404, 409)
    def post(self, payment, payment_id):
        """Simulate the payer paying a test-mode transaction by one of its methods."""
        transaction = payments.get_payment(
            g.account_id, sandbox_mode("No such charge."), payment_id
        )
        simulated_payer.pay_by_method(
            transaction, payment.get("method"), approved=payment["approved"]
        )
        db.session.commit()
        return transaction


def _refund(refund: Refund) -> dict:
    return refund_fields(refund, db.session.get(Transaction, refund.transaction_id))
