"""Merchant refunds of paid transactions and their life at the provider.

Money moves at three points, each a ledger posting unique per refund:
- the request debits the wallet's available balance at once (the amount, plus the Pix-out fee
  when `passFeeToTenant`) into refund clearing, refusing when it does not cover both; it
  holds the transaction's row lock, so concurrent refunds can never exceed the amount;
- REFUNDED moves the amount from refund clearing out to the provider;
- FAILED returns everything the request debited to available.

Status: PENDING (debited, not yet accepted by the provider) → IN_PROGRESS → REFUNDED or
FAILED. A job submits the refund right after the request commits; an `rq cron` job submits
any whose job never ran and polls the provider for the ones in progress. It also polls the
automatic Pix returns in progress (`pix_payments`), which it moves by status alone: they hold
none of the merchant's money, so they post nothing.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.errors import InvalidRequest, Unprocessable
from app.extensions import URGENT_QUEUE, db
from app.formats.payments import payment_event_data, refund_event_data
from app.jobs.queueing import enqueue_after_commit
from app.models import (
    SETTLED_STATUSES,
    KeyMode,
    LedgerAccount,
    ReceivedPix,
    ReceivedPixOutcome,
    Refund,
    RefundStatus,
    RefundStrategy,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix import keys
from app.providers import provider_named, require_pix_out, sends_pix_out
from app.providers.base import PaymentProvider, ProviderError, ProviderRefused, RefundRequest
from app.services import fees, ledger, payments, pix_payments, transactions
from app.services.events import record_event
from app.services.ledger import Line

log = logging.getLogger(__name__)
S = TransactionStatus
R = RefundStatus
DISPUTED = frozenset({S.DISPUTE, S.CHARGEBACK})
PIX = "PIX"
MAX_REASON = 500
MAX_SUBMIT_ATTEMPTS = 5
SUBMIT_GRACE = timedelta(seconds=30)  # a refund's own job normally runs well within this
# A provider that failed to answer is asked again after SUBMIT_GRACE, then twice as long after
# each further failure, at most every MAX_SUBMIT_BACKOFF.
MAX_SUBMIT_BACKOFF = timedelta(hours=1)
SUBMIT_JOB = "app.jobs.refunds.submit_refund"
REFUND_NOT_SUPPORTED = "REFUND_NOT_SUPPORTED"
CHARGE_DISPUTED = "charge_disputed"
INSUFFICIENT_FUNDS = "insufficient_funds"
# Ledger posting kinds, unique per refund.
DEBIT, COMPLETION, REVERSAL = "refund_debit", "refund_completion", "refund_reversal"


@dataclass(frozen=True)
class RefundOrder:
    """A refund as the merchant asked for it (`None`: not sent)."""

    amount: int | None = None
    reason: str | None = None
    strategy: str | None = None
    pass_fee_to_tenant: bool | None = None
    destination_key: str | None = None


def request_refund(account_id: str, mode: KeyMode, payment_id: str, order: RefundOrder) -> Refund:
    """Debit the wallet and queue the refund; 400/422 with a clear code when it cannot be."""
    payment = transactions.lock(payments.get_payment(account_id, mode, payment_id).id)
    provider = _check_refundable(payment)
    strategy, destination = _route(payment, order, provider)
    if order.amount is not None and order.amount <= 0:
        # The API schema refuses it first; the dashboard and other callers rely on this.
        # A negative refund would post a *credit* to available through `_debit`.
        raise InvalidRequest("amount is an integer > 0.", code="invalid_amount", param="amount")
    remaining = payment.amount - refunded_or_in_flight(payment)
    amount = remaining if order.amount is None else order.amount
    if amount > remaining or remaining <= 0:
        raise InvalidRequest(
            f"At most {max(remaining, 0)} of this transaction can still be refunded.",
            code="refund_exceeds_refundable",
            param="amount",
        )
    if order.reason is not None and len(order.reason) > MAX_REASON:
        raise InvalidRequest(f"reason is at most {MAX_REASON} characters.", param="reason")
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
        fee=fees.payout_fee(PIX, amount) if charges_fee else 0,
        end_to_end_id=payment.end_to_end_id if strategy is RefundStrategy.DEVOLUTION else None,
    )
    db.session.add(refund)
    db.session.flush()
    _debit(refund)
    enqueue_after_commit(db.session(), URGENT_QUEUE, SUBMIT_JOB, refund.id)
    return refund


def refunded_or_in_flight(payment: Transaction) -> int:
    """What the merchant's refunds have taken or are taking (everything but FAILED)."""
    return _sum_of_refunds(payment, Refund.status != R.FAILED)


def list_refunds(account_id: str, mode: KeyMode, payment_id: str) -> tuple[Transaction, list]:
    """Every refund of the transaction (automatic Pix returns too), newest first."""
    payment = payments.get_payment(account_id, mode, payment_id)
    rows = db.session.scalars(
        sa.select(Refund)
        .where(Refund.transaction_id == payment.id)
        .order_by(Refund.created_at.desc(), Refund.id.desc())
    ).all()
    return payment, list(rows)


def submit(refund_id: str) -> Refund | None:
    """Hand a PENDING refund to the provider (idempotent by our refund id). A refusal turns
    it FAILED, with the money back in the wallet; an error of unknown outcome (a timeout:
    the provider may have sent the money) leaves it PENDING, asked again by the polling job
    with the same reference, and is reported once it has failed `MAX_SUBMIT_ATTEMPTS`."""
    refund = _lock(refund_id)
    if refund is None or refund.status is not R.PENDING or refund.automatic:
        return refund  # automatic returns are sent by `pix_payments` as they are decided
    payment = db.session.get(Transaction, refund.transaction_id)
    provider = provider_named(payment.provider, payment.mode)
    try:
        refund.provider_reference = provider.refund(
            RefundRequest(
                reference=refund.id,
                method=refund.method,
                strategy=refund.strategy.value if refund.strategy else None,
                amount=refund.amount,
                currency=refund.currency,
                payment_reference=payment.provider_references.get(refund.method),
                end_to_end_id=refund.end_to_end_id,
                destination_key=refund.destination_key,
            )
        )
    except ProviderRefused as error:
        _fail(refund, f"The provider refused the refund: {error.message}")
        return refund
    except ProviderError as error:
        refund.submit_attempts += 1
        refund.updated_at = utcnow()
        if refund.submit_attempts >= MAX_SUBMIT_ATTEMPTS:
            log.error(
                "refund still not accepted by the provider; reconcile with it",
                extra={"id": refund.id, "attempts": refund.submit_attempts, "error": error.code},
            )
        return refund
    refund.status = R.IN_PROGRESS
    refund.updated_at = utcnow()
    return refund


def poll(refund_id: str) -> Refund | None:
    """Ask the provider where an IN_PROGRESS refund stands and apply the answer (to an
    automatic return, its status alone)."""
    refund = _lock(refund_id)
    if refund is None or refund.status is not R.IN_PROGRESS:
        return refund
    payment = db.session.get(Transaction, refund.transaction_id)
    provider = provider_named(payment.provider, payment.mode)
    refund.updated_at = utcnow()  # polled now: the others come first next time
    try:
        state = provider.refund_status(refund.provider_reference)
    except ProviderError as error:
        log.warning("refund status unavailable", extra={"id": refund.id, "error": error.code})
        return refund
    if refund.automatic:
        pix_payments.settle_return(refund, R(state.status), failure_reason=state.failure_reason)
    elif state.status == R.REFUNDED:
        _complete(refund)
    elif state.status == R.FAILED:
        _fail(refund, state.failure_reason or "The provider could not refund the payer.")
    return refund


def due_refunds(now: datetime | None = None, limit: int = 200) -> list[str]:
    """Refunds the polling job should act on: merchant refunds in progress, or pending past
    their job and their backoff after failed submissions, and automatic returns in progress
    at the provider (a lost settlement webhook would otherwise leave them so for ever)."""
    merchant_refund = sa.and_(
        Refund.automatic.is_(False),
        sa.or_(Refund.status == R.IN_PROGRESS, _due_for_submission(now or utcnow())),
    )
    automatic_return = sa.and_(
        Refund.automatic.is_(True),
        Refund.status == R.IN_PROGRESS,
        Refund.provider_reference.is_not(None),
    )
    return list(
        db.session.scalars(
            sa.select(Refund.id)
            .where(sa.or_(merchant_refund, automatic_return))
            .order_by(Refund.updated_at)
            .limit(limit)
        )
    )


def submit_backoff(attempts: int) -> timedelta:
    """How long a PENDING refund waits before the next submission, after `attempts` failed."""
    return min(SUBMIT_GRACE * 2**attempts, MAX_SUBMIT_BACKOFF)


def _due_for_submission(now: datetime) -> sa.ColumnElement[bool]:
    """PENDING refunds whose wait (`submit_backoff` of their failed attempts) is over."""
    capped = next(n for n in range(64) if submit_backoff(n) == MAX_SUBMIT_BACKOFF)
    waits = [
        sa.and_(Refund.submit_attempts == n, Refund.updated_at <= now - submit_backoff(n))
        for n in range(capped)
    ]
    waits.append(
        sa.and_(Refund.submit_attempts >= capped, Refund.updated_at <= now - MAX_SUBMIT_BACKOFF)
    )
    return sa.and_(Refund.status == R.PENDING, sa.or_(*waits))


def _check_refundable(payment: Transaction) -> PaymentProvider:
    """The provider that will refund the payment, or 400/422 when it cannot be refunded."""
    if payment.status in DISPUTED:
        raise InvalidRequest(
            "This transaction is disputed and cannot be refunded: the disputed amount is held "
            "until the case is decided, or was already returned to the payer.",
            code=CHARGE_DISPUTED,
        )
    if payment.status not in SETTLED_STATUSES:
        raise InvalidRequest(
            f"Only PAID or APPROVED transactions can be refunded; this one is {payment.status}.",
            code="transaction_not_refundable",
        )
    provider = provider_named(payment.provider, payment.mode)
    if payment.paid_with not in provider.refundable_methods:
        raise Unprocessable(
            f"The provider of {payment.paid_with} payments does not support refunds.",
            code=REFUND_NOT_SUPPORTED,
        )
    return provider


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
            instead = (
                "use the cashout strategy instead."
                if sends_pix_out(provider)
                else "this provider sends no Pix-outs, so it can no longer be refunded by Pix."
            )
            raise InvalidRequest(
                f"A Pix devolution is possible for 90 days after the payment; {instead}",
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


def _debit(refund: Refund) -> None:
    total = refund.amount + refund.fee
    wallet = ledger.locked_wallet(refund.account_id, refund.mode, refund.currency)
    if wallet.available < total:
        raise InvalidRequest(
            f"The available balance ({wallet.available}) does not cover the refund ({total}); "
            f"{wallet.pending} more is pending release.",
            code=INSUFFICIENT_FUNDS,
            param="amount",
        )
    lines = [
        Line(LedgerAccount.AVAILABLE, -total),
        Line(LedgerAccount.REFUND_CLEARING, refund.amount),
    ]
    if refund.fee:
        lines.append(Line(LedgerAccount.PLATFORM_FEES, refund.fee))
    _post(refund, DEBIT, "Refund requested", lines)


def _complete(refund: Refund) -> None:
    """REFUNDED: the money leaves; the transaction is REFUNDED once refunds cover it all."""
    now = utcnow()
    refund.status, refund.completed_at, refund.updated_at = R.REFUNDED, now, now
    _post(
        refund,
        COMPLETION,
        "Refund sent",
        [
            Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, refund.amount),
        ],
    )
    payment = transactions.lock(refund.transaction_id)
    total = refunded_total(payment)
    details = refund_event_data(refund, total)
    if total >= payment.amount and payment.status in SETTLED_STATUSES:
        transactions.transition(payment, S.REFUNDED, at=now, event_details=details)
        return
    record_event(
        payment.account_id,
        payment.mode,
        "payment.refunded",
        payment_event_data(payment, payment.status, now) | details,
        subject_type="transaction",
        subject_id=payment.id,
    )


def _fail(refund: Refund, reason: str) -> None:
    """FAILED: everything the request debited goes back to available."""
    now = utcnow()
    refund.status, refund.completed_at, refund.updated_at = R.FAILED, now, now
    refund.failure_reason = reason[:500]
    lines = [
        Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
        Line(LedgerAccount.AVAILABLE, refund.amount + refund.fee),
    ]
    if refund.fee:
        lines.append(Line(LedgerAccount.PLATFORM_FEES, -refund.fee))
    _post(refund, REVERSAL, "Refund failed, returned", lines)


def refunded_total(payment: Transaction) -> int:
    """What the merchant's completed refunds sent back to the payer."""
    return _sum_of_refunds(payment, Refund.status == R.REFUNDED)


def _sum_of_refunds(payment: Transaction, condition: sa.ColumnElement[bool]) -> int:
    """The merchant's refunds of `payment` meeting `condition`, added up. An int on every
    backend: PostgreSQL sums a bigint as numeric (Decimal), which JSON event data refuses."""
    total = db.session.scalar(
        sa.select(sa.func.coalesce(sa.func.sum(Refund.amount), 0)).where(
            Refund.transaction_id == payment.id,
            Refund.automatic.is_(False),
            condition,
        )
    )
    return int(total)


def _post(refund: Refund, kind: str, label: str, lines: list[Line]) -> None:
    ledger.post(
        account_id=refund.account_id,
        mode=refund.mode,
        currency=refund.currency,
        kind=kind,
        reference_id=refund.id,
        description=f"{label}: refund {refund.id} of transaction {refund.transaction_id}",
        lines=lines,
    )


def _lock(refund_id: str) -> Refund | None:
    return db.session.scalar(
        sa.select(Refund)
        .where(Refund.id == refund_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
