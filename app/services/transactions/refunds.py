"""Merchant refunds of paid transactions: whether one may be refunded and how much
(`refundability`), the request, reading them, and cancelling one that waits for money.

A refund is never refused for timing. Its request reserves the amount against the
transaction (refunds can never exceed it) and funds it at once when it can
(`refund_funding`): first from the payment's own settlement tranche still pending release
(the payer's own money going back to the payer), the rest from available. What they cannot
cover waits: status PENDING with a `pending_reason` (`charge_pending` when the wallet's
unreleased settlements will cover it, `insufficient_funds` otherwise), nothing debited,
funded by the polling job as soon as the money is there, and cancellable by the merchant
until then. Once funded, `refund_submission` hands it to the provider and follows it.

Status (`refund_states`): PENDING → IN_PROGRESS → REFUNDED or FAILED.
"""

from dataclasses import dataclass

import sqlalchemy as sa

from app.errors import Conflict, InvalidRequest, NotFound, Unprocessable
from app.extensions import MONEY_QUEUE, db
from app.formats.money import Amount
from app.marks import translatable
from app.models import (
    DISPUTED_STATUSES,
    SETTLED_STATUSES,
    KeyMode,
    ReceivedPix,
    ReceivedPixOutcome,
    Refund,
    RefundStatus,
    RefundStrategy,
    Transaction,
)
from app.pix import keys
from app.providers import provider_named, require_pix_out, sends_pix_out
from app.providers.base import PaymentProvider
from app.queueing import enqueue_after_commit
from app.services import fees
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.transactions import lifecycle, payments, pix_payments, refund_funding
from app.services.transactions.refund_totals import reserved_total

R = RefundStatus
PIX = "PIX"
MAX_REASON = 500
REFUND_NOT_SUPPORTED = "REFUND_NOT_SUPPORTED"
CHARGE_DISPUTED = "charge_disputed"
EXCEEDS_REFUNDABLE = "refund_exceeds_refundable"
NOT_CANCELLABLE = "refund_not_cancellable"
CANCELLED_BY_MERCHANT = translatable(
    "Cancelled by the merchant before it was funded; nothing was debited."
)


@dataclass(frozen=True)
class RefundOrder:
    """A refund as the merchant asked for it (`None`: not sent)."""

    amount: int | None = None
    reason: str | None = None
    strategy: str | None = None
    pass_fee_to_tenant: bool | None = None
    destination_key: str | None = None


@dataclass(frozen=True)
class Refundability(Allowance):
    """Whether a payment may be refunded now, and how much of it at most."""

    amount: int = 0


def refundability(payment: Transaction) -> Refundability:
    """The one answer to "may this payment be refunded, and how much?" that the API, the
    dashboard and the jobs share. Never depends on the wallet: a refund waits for money."""
    if payment.status in DISPUTED_STATUSES:
        return Refundability(
            Conflict(
                translatable(
                    "This transaction is disputed and cannot be refunded: the disputed amount "
                    "is held until the case is decided, or was already returned to the payer."
                ),
                code=CHARGE_DISPUTED,
            )
        )
    if payment.status not in SETTLED_STATUSES:
        return Refundability(
            Conflict(
                translatable(
                    "Only PAID or APPROVED transactions can be refunded; this one is %(status)s."
                ),
                values={"status": payment.status},
                code="transaction_not_refundable",
            )
        )
    provider = provider_named(payment.provider, payment.mode)
    if payment.paid_with not in provider.refundable_methods:
        return Refundability(
            Unprocessable(
                translatable("The provider of %(method)s payments does not support refunds."),
                values={"method": payment.paid_with},
                code=REFUND_NOT_SUPPORTED,
            )
        )
    remaining = payment.amount - reserved_total(payment)
    if remaining <= 0:
        return Refundability(
            InvalidRequest(
                translatable("Refunds already cover the whole transaction."),
                code=EXCEEDS_REFUNDABLE,
                param="amount",
            )
        )
    return Refundability(amount=remaining)


def request_refund(account_id: str, mode: KeyMode, payment_id: str, order: RefundOrder) -> Refund:
    """Reserve the refund and fund it now, or let it wait for money; with a clear code when
    it cannot be: 409 for the payment's state, 400 for the request, 422 for the provider
    (never for lack of funds)."""
    payment = lifecycle.lock(payments.get_payment(account_id, mode, payment_id).id)
    refundable = refundability(payment)
    refundable.require()
    provider = provider_named(payment.provider, payment.mode)
    strategy, destination = _route(payment, order, provider)
    if order.amount is not None and order.amount <= 0:
        # The API schema refuses it first; the dashboard and other callers rely on this.
        # A negative refund would post a *credit* to available through `refund_funding.fund_now`.
        raise InvalidRequest("amount is an integer > 0.", code="invalid_amount", param="amount")
    amount = refundable.amount if order.amount is None else order.amount
    if amount > refundable.amount:
        raise InvalidRequest(
            translatable("At most %(amount)s of this transaction can still be refunded."),
            values={"amount": Amount(refundable.amount, payment.currency)},
            code=EXCEEDS_REFUNDABLE,
            param="amount",
        )
    if order.reason is not None and len(order.reason) > MAX_REASON:
        raise InvalidRequest(
            translatable("reason is at most %(max)s characters."),
            values={"max": MAX_REASON},
            param="reason",
        )
    charges_fee = strategy is RefundStrategy.CASHOUT and bool(order.pass_fee_to_tenant)
    refund = Refund(
        account_id=payment.account_id,
        transaction_id=payment.id,
        mode=payment.mode,
        amount=amount,
        currency=payment.currency,
        status=R.PENDING,
        reason=order.reason or None,
        automatic=False,
        method=payment.paid_with,
        strategy=strategy,
        pass_fee_to_tenant=charges_fee,
        destination_key=destination,
        fee=fees.payout_cost(PIX, amount).fee if charges_fee else 0,
        end_to_end_id=payment.end_to_end_id if strategy is RefundStrategy.DEVOLUTION else None,
    )
    db.session.add(refund)
    db.session.flush()
    if refund_funding.fund_now(refund):
        enqueue_after_commit(db.session(), MONEY_QUEUE, refund_funding.SUBMIT_JOB, refund.id)
    return refund


def list_refunds(account_id: str, mode: KeyMode, payment_id: str) -> tuple[Transaction, list]:
    """Every refund of the transaction (automatic Pix returns too), newest first."""
    payment = payments.get_payment(account_id, mode, payment_id)
    rows = db.session.scalars(
        sa.select(Refund)
        .where(Refund.transaction_id == payment.id)
        .order_by(Refund.created_at.desc(), Refund.id.desc())
    ).all()
    return payment, list(rows)


def get_refund(account_id: str, mode: KeyMode, payment_id: str, refund_id: str) -> Refund:
    """A merchant refund of the caller's payment; anything else is 404."""
    payment = payments.get_payment(account_id, mode, payment_id)
    refund = db.session.scalar(
        sa.select(Refund).where(
            Refund.id == refund_id,
            Refund.transaction_id == payment.id,
            Refund.automatic.is_(False),
        )
    )
    if refund is None:
        raise NotFound(translatable("No such refund."))
    return refund


def cancellability(refund: Refund) -> Allowance:
    """Only a refund still waiting for money may be cancelled: once funded it may already
    be on its way to the payer."""
    if refund.status is R.PENDING and refund.pending_reason is not None:
        return ALLOWED
    return refused(
        Conflict(
            translatable("Only a refund waiting for funds can be cancelled; it is already funded.")
            if refund.status is R.PENDING
            else translatable(
                "Only a refund waiting for funds can be cancelled; this one is %(status)s."
            ),
            values={} if refund.status is R.PENDING else {"status": refund.status},
            code=NOT_CANCELLABLE,
        )
    )


def cancel_refund(account_id: str, mode: KeyMode, payment_id: str, refund_id: str) -> Refund:
    """The merchant withdraws a refund that waits for money: FAILED, nothing moves."""
    found = get_refund(account_id, mode, payment_id, refund_id)
    refund, _ = refund_funding.lock(found.id)
    cancellability(refund).require()
    refund_funding.end_waiting(refund, CANCELLED_BY_MERCHANT)
    return refund


def _route(
    payment: Transaction, order: RefundOrder, provider: PaymentProvider
) -> tuple[RefundStrategy | None, str | None]:
    """The Pix strategy and destination key (cashout), or (None, None) for other methods.
    A devolution is checked against the 90-day window here, before any money moves."""
    pix_options = (order.strategy, order.pass_fee_to_tenant, order.destination_key)
    if payment.paid_with != PIX:
        if any(option is not None for option in pix_options):
            raise InvalidRequest(
                "strategy, passFeeToTenant and destinationKey apply to Pix refunds only.",
                param="strategy",
            )
        return None, None
    strategy = RefundStrategy(order.strategy or RefundStrategy.CASHOUT)
    if strategy is RefundStrategy.DEVOLUTION:
        if order.pass_fee_to_tenant or order.destination_key is not None:
            raise InvalidRequest(
                "passFeeToTenant and destinationKey apply to the cashout strategy only.",
                param="destinationKey" if order.destination_key is not None else "passFeeToTenant",
            )
        if not pix_payments.within_devolution_window(payment.paid_at):
            raise Conflict(
                translatable(
                    "A Pix devolution is possible for 90 days after the payment; use the "
                    "cashout strategy instead."
                )
                if sends_pix_out(provider)
                else translatable(
                    "A Pix devolution is possible for 90 days after the payment; this provider "
                    "sends no Pix-outs, so it can no longer be refunded by Pix."
                ),
                code="refund_window_expired",
                param="strategy",
            )
        return strategy, None
    require_pix_out(provider)
    return strategy, _cashout_destination(payment, order.destination_key)


def _cashout_destination(payment: Transaction, destination_key: str | None) -> str:
    """The given Pix key, or the payer's CPF/CNPJ (a Pix key by law) from the received Pix."""
    if destination_key is not None:
        check = keys.validate(destination_key)
        if not check.valid:
            raise InvalidRequest(
                f"destinationKey is not a valid Pix key: {'; '.join(check.errors)}",
                code="invalid_pix_key",
                param="destinationKey",
            )
        return check.normalised
    payer = db.session.scalar(
        sa.select(ReceivedPix.payer_document).where(
            ReceivedPix.transaction_id == payment.id,
            ReceivedPix.outcome == ReceivedPixOutcome.CREDITED,
        )
    )
    if payer is None:
        raise InvalidRequest(
            "The payer's document is unknown; send destinationKey, or use the devolution strategy.",
            code="refund_destination_required",
            param="destinationKey",
        )
    return payer
