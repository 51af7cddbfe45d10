"""Merchant refunds of paid transactions and their life at the provider.

A refund is never refused for timing. Its request reserves the amount against the
transaction (refunds can never exceed it) and funds it at once when it can: first from the
payment's own settlement tranche still pending release (the payer's own money going back
to the payer), the rest from available. What they cannot cover waits: status PENDING with a
`pending_reason` (`charge_pending` when the wallet's unreleased settlements will cover it,
`insufficient_funds` otherwise), nothing debited, funded by the polling job as soon as the
money is there (`fund`), and cancellable by the merchant until then.

Money moves at three points, each a ledger posting unique per refund:
- funding debits the tranche's pending part and available (the amount, plus the Pix-out fee
  when `passFeeToTenant`) into refund clearing, holding the transaction's row lock;
- REFUNDED moves the amount from refund clearing out to the provider (and an undecided
  dispute of the transaction releases what the refund already returned, `dispute_holds`);
- FAILED returns what funding debited: the tranche's part to the tranche while it is still
  pending, the rest to available.

Status (`refund_states`): PENDING → IN_PROGRESS → REFUNDED or FAILED. A job submits a funded
refund right after it commits; an `rq cron` job funds waiting ones, submits any whose job
never ran and polls the provider for the ones in progress. It also polls the automatic Pix
returns in progress (`pix_payments`), which it moves by status alone: they hold none of the
merchant's money, so they post nothing.

Locks are always taken in one order (transaction, refund, dispute case, tranche, wallet),
so concurrent refunds, disputes and releases never deadlock.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.errors import Conflict, InvalidRequest, NotFound, Unprocessable
from app.extensions import MONEY_QUEUE, db
from app.formats.payments import payment_event_data, refund_event_data
from app.models import (
    DISPUTED_STATUSES,
    SETTLED_STATUSES,
    KeyMode,
    LedgerAccount,
    PendingReason,
    ReceivedPix,
    ReceivedPixOutcome,
    Refund,
    RefundStatus,
    RefundStrategy,
    SettlementRelease,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix import keys
from app.providers import provider_named, require_pix_out, sends_pix_out
from app.providers.base import (
    PaymentProvider,
    ProviderError,
    ProviderRefused,
    RefundRequest,
    RefundStatusRequest,
)
from app.queueing import enqueue_after_commit
from app.retries import backoff
from app.services import dispute_holds, fees, ledger, locking
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.events import record_event
from app.services.ledger import Line
from app.services.transactions import lifecycle, payments, pix_payments, refund_states
from app.services.transactions.refund_totals import refunded_total, reserved_total

log = logging.getLogger(__name__)
S = TransactionStatus
R = RefundStatus
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
EXCEEDS_REFUNDABLE = "refund_exceeds_refundable"
NOT_CANCELLABLE = "refund_not_cancellable"
CANCELLED_BY_MERCHANT = "Cancelled by the merchant before it was funded; nothing was debited."
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
                "This transaction is disputed and cannot be refunded: the disputed amount is "
                "held until the case is decided, or was already returned to the payer.",
                code=CHARGE_DISPUTED,
            )
        )
    if payment.status not in SETTLED_STATUSES:
        return Refundability(
            Conflict(
                f"Only PAID or APPROVED transactions can be refunded; this one is "
                f"{payment.status}.",
                code="transaction_not_refundable",
            )
        )
    provider = provider_named(payment.provider, payment.mode)
    if payment.paid_with not in provider.refundable_methods:
        return Refundability(
            Unprocessable(
                f"The provider of {payment.paid_with} payments does not support refunds.",
                code=REFUND_NOT_SUPPORTED,
            )
        )
    remaining = payment.amount - reserved_total(payment)
    if remaining <= 0:
        return Refundability(
            InvalidRequest(
                "Refunds already cover the whole transaction.",
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
        # A negative refund would post a *credit* to available through `_fund`.
        raise InvalidRequest("amount is an integer > 0.", code="invalid_amount", param="amount")
    amount = refundable.amount if order.amount is None else order.amount
    if amount > refundable.amount:
        raise InvalidRequest(
            f"At most {refundable.amount} of this transaction can still be refunded.",
            code=EXCEEDS_REFUNDABLE,
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
    if _fund(refund):
        enqueue_after_commit(db.session(), MONEY_QUEUE, SUBMIT_JOB, refund.id)
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
        raise NotFound("No such refund.")
    return refund


def cancellability(refund: Refund) -> Allowance:
    """Only a refund still waiting for money may be cancelled: once funded it may already
    be on its way to the payer."""
    if refund.status is R.PENDING and refund.pending_reason is not None:
        return ALLOWED
    return refused(
        Conflict(
            f"Only a refund waiting for funds can be cancelled; this one is {refund.status}"
            + (" and already funded." if refund.status is R.PENDING else "."),
            code=NOT_CANCELLABLE,
        )
    )


def cancel_refund(account_id: str, mode: KeyMode, payment_id: str, refund_id: str) -> Refund:
    """The merchant withdraws a refund that waits for money: FAILED, nothing moves."""
    found = get_refund(account_id, mode, payment_id, refund_id)
    refund, _ = _lock(found.id)
    cancellability(refund).require()
    _end_waiting(refund, CANCELLED_BY_MERCHANT)
    return refund


def waiting_refunds(limit: int = 200) -> list[str]:
    """Refunds waiting for money, oldest first: the first asked are the first funded."""
    return list(
        db.session.scalars(
            sa.select(Refund.id)
            .where(Refund.status == R.PENDING, Refund.pending_reason.is_not(None))
            .order_by(Refund.created_at, Refund.id)
            .limit(limit)
        )
    )


def fund(refund_id: str) -> Refund | None:
    """Fund a waiting refund if the money is there now (and queue its submission); one of a
    disputed transaction waits for the decision."""
    refund, payment = _lock(refund_id)
    if refund is None or refund.status is not R.PENDING or refund.pending_reason is None:
        return refund
    if payment.status not in DISPUTED_STATUSES and _fund(refund):
        refund.updated_at = utcnow()
        enqueue_after_commit(db.session(), MONEY_QUEUE, SUBMIT_JOB, refund.id)
    return refund


def fail_waiting(payment: Transaction, reason: str) -> None:
    """End every refund of the locked `payment` still waiting for money (a lost dispute
    already returned the amount to the payer)."""
    waiting = db.session.scalars(
        sa.select(Refund)
        .where(
            Refund.transaction_id == payment.id,
            Refund.status == R.PENDING,
            Refund.pending_reason.is_not(None),
        )
        .order_by(Refund.created_at, Refund.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    for refund in waiting:
        _end_waiting(refund, reason)


def submit(refund_id: str) -> Refund | None:
    """Hand a funded PENDING refund to the provider (idempotent by our refund id). A refusal
    turns it FAILED, with the money back; an error of unknown outcome (a timeout: the
    provider may have sent the money) leaves it PENDING, asked again by the polling job with
    the same reference, and is reported once it has failed `MAX_SUBMIT_ATTEMPTS`."""
    refund, payment = _lock(refund_id)
    if refund is None or refund.status is not R.PENDING or refund.automatic:
        return refund  # automatic returns are sent by `pix_payments` as they are decided
    if refund.pending_reason is not None:
        return refund  # waiting for money: `fund` queues it once funded
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
        _fail(refund, payment, f"The provider refused the refund: {error.message}")
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
    refund_states.move(refund, R.IN_PROGRESS)
    return refund


def poll(refund_id: str) -> Refund | None:
    """Ask the provider where an IN_PROGRESS refund stands and apply the answer (to an
    automatic return, its status alone)."""
    refund, payment = _lock(refund_id)
    if refund is None or refund.status is not R.IN_PROGRESS:
        return refund
    provider = provider_named(payment.provider, payment.mode)
    refund.updated_at = utcnow()  # polled now: the others come first next time
    try:
        state = provider.refund_status(
            RefundStatusRequest(refund.provider_reference, refund.amount)
        )
    except ProviderError as error:
        log.warning("refund status unavailable", extra={"id": refund.id, "error": error.code})
        return refund
    if refund.automatic:
        pix_payments.settle_return(refund, R(state.status), failure_reason=state.failure_reason)
    elif state.status == R.REFUNDED:
        _complete(refund, payment)
    elif state.status == R.FAILED:
        _fail(refund, payment, state.failure_reason or "The provider could not refund the payer.")
    return refund


def due_refunds(now: datetime | None = None, limit: int = 200) -> list[str]:
    """Refunds the polling job should act on: merchant refunds in progress, or funded and
    pending past their job and their backoff after failed submissions, and automatic returns
    in progress at the provider (a lost settlement webhook would otherwise leave them so for
    ever)."""
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
    # Unjittered: `_due_for_submission` turns these waits into fixed SQL thresholds.
    return backoff(attempts, SUBMIT_GRACE, MAX_SUBMIT_BACKOFF, jitter=0)


def _due_for_submission(now: datetime) -> sa.ColumnElement[bool]:
    """Funded PENDING refunds whose wait (`submit_backoff` of their failed attempts) is over."""
    capped = next(n for n in range(64) if submit_backoff(n) == MAX_SUBMIT_BACKOFF)
    waits = [
        sa.and_(Refund.submit_attempts == n, Refund.updated_at <= now - submit_backoff(n))
        for n in range(capped)
    ]
    waits.append(
        sa.and_(Refund.submit_attempts >= capped, Refund.updated_at <= now - MAX_SUBMIT_BACKOFF)
    )
    return sa.and_(Refund.status == R.PENDING, Refund.pending_reason.is_(None), sa.or_(*waits))


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
            raise Conflict(
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


def _unreleased_tranche(refund: Refund) -> SettlementRelease | None:
    """The refunded payment's own settlement tranche while it is still pending, locked."""
    return db.session.scalar(
        sa.select(SettlementRelease)
        .where(
            SettlementRelease.reference_id == refund.transaction_id,
            SettlementRelease.released_at.is_(None),
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def _fund(refund: Refund) -> bool:
    """Debit the refund now when the payment's unreleased tranche plus available cover it
    (True); otherwise record why it waits and debit nothing (False)."""
    total = refund.amount + refund.fee
    tranche = _unreleased_tranche(refund)
    from_pending = min(tranche.amount, total) if tranche else 0
    from_available = total - from_pending
    wallet = ledger.locked_wallet(refund.account_id, refund.mode, refund.currency)
    if from_available > max(wallet.available, 0):
        other_pending = wallet.pending - from_pending
        covered_by_releases = wallet.available + other_pending >= from_available
        refund.pending_reason = (
            PendingReason.CHARGE_PENDING
            if covered_by_releases
            else PendingReason.INSUFFICIENT_FUNDS
        )
        return False
    if tranche is not None:
        tranche.amount -= from_pending
    refund.taken_from_pending = from_pending
    refund.pending_reason = None
    lines = [
        Line(LedgerAccount.PENDING, -from_pending),
        Line(LedgerAccount.AVAILABLE, -from_available),
        Line(LedgerAccount.REFUND_CLEARING, refund.amount),
        Line(LedgerAccount.PLATFORM_FEES, refund.fee),
    ]
    _post(refund, DEBIT, "Refund funded", lines)
    return True


def _complete(refund: Refund, payment: Transaction) -> None:
    """REFUNDED: the money leaves; an undecided dispute releases what it no longer risks;
    the transaction is REFUNDED once refunds cover it all."""
    now = utcnow()
    refund_states.move(refund, R.REFUNDED, now)
    refund.completed_at = now
    _post(
        refund,
        COMPLETION,
        "Refund sent",
        [
            Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, refund.amount),
        ],
    )
    dispute_holds.follow_refunds(payment, refund)
    total = refunded_total(payment)
    details = refund_event_data(refund, total)
    if total >= payment.amount and payment.status in SETTLED_STATUSES:
        lifecycle.transition(payment, S.REFUNDED, at=now, event_details=details)
        return
    record_event(
        payment.account_id,
        payment.mode,
        "payment.refunded",
        payment_event_data(payment, payment.status, now) | details,
        subject_type="transaction",
        subject_id=payment.id,
    )


def _fail(refund: Refund, payment: Transaction, reason: str) -> None:
    """FAILED: what funding debited goes back, the tranche's part to the tranche while it is
    still pending, everything else to available."""
    now = utcnow()
    refund_states.move(refund, R.FAILED, now)
    refund.completed_at = now
    refund.failure_reason = reason[:500]
    tranche = _unreleased_tranche(refund) if refund.taken_from_pending else None
    to_pending = refund.taken_from_pending if tranche is not None else 0
    if tranche is not None:
        tranche.amount += to_pending
    lines = [
        Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
        Line(LedgerAccount.PLATFORM_FEES, -refund.fee),
        Line(LedgerAccount.PENDING, to_pending),
        Line(LedgerAccount.AVAILABLE, refund.amount + refund.fee - to_pending),
    ]
    _post(refund, REVERSAL, "Refund failed, returned", lines)


def _end_waiting(refund: Refund, reason: str) -> None:
    """A refund that never got money ends FAILED; there is nothing to give back."""
    now = utcnow()
    refund_states.move(refund, R.FAILED, now)
    refund.completed_at = now
    refund.pending_reason = None
    refund.failure_reason = reason[:500]


def _post(refund: Refund, kind: str, label: str, lines: list[Line]) -> None:
    ledger.post(
        account_id=refund.account_id,
        mode=refund.mode,
        currency=refund.currency,
        kind=kind,
        reference_id=refund.id,
        description=f"{label}: refund {refund.id} of transaction {refund.transaction_id}",
        lines=[line for line in lines if line.amount],
    )


def _lock(refund_id: str) -> tuple[Refund | None, Transaction | None]:
    """The refund and its transaction, locked in the one order (transaction first)."""
    transaction_id = db.session.scalar(
        sa.select(Refund.transaction_id).where(Refund.id == refund_id)
    )
    if transaction_id is None:
        return None, None
    payment = lifecycle.lock(transaction_id)
    return locking.lock(Refund, refund_id), payment
