"""The life of a dispute case (MED, chargebacks) and the money each step moves: opening on
the dispute channel's notice, the merchant's appeal or acceptance, the channel's evidence
request and decision, and staff confirming an amount that differed. Whether an action is
allowed now is asked of `allowances`.

Money, one ledger posting per case and step (unique by kind and case id):
- opening holds what is at risk (`dispute_holds`): the disputed amount, less what the
  merchant's completed refunds already returned: available → retained (available may go
  negative); a refund in flight is held as if it will fail, and its completion releases
  that part;
- `refunded_to_merchant` releases the hold: retained → available, and the charge is paid
  again;
- `lost` (accepted, rejected) and `closed_without_refund` send the hold to the payer's bank:
  retained → provider clearing; the charge stays disputed, and refunds of it still waiting
  for money end FAILED.
A case whose reported amount differs from the charge's holds nothing and changes no status:
it is flagged (`amount_mismatch`, `under_review`) for the operations team, and cannot be lost
until staff confirm the amount to hold (`confirm_amount`).

Events: `med_case.created` on opening, `med_case.updated` on every status change and when
evidence is requested, `med.resolved` with the money outcome. Outcome notices can be switched
off (`DISPUTE_OUTCOME_EVENTS`). No `charge.*` event is ever sent because of a dispute. Opening
and deciding ask for the e-mail notices (`notices`) after commit.
"""

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from flask import current_app

from app.errors import Conflict, InvalidRequest, NotFound
from app.extensions import DEFAULT_QUEUE, db
from app.formats.disputes import med_metadata
from app.formats.money import DECIMAL_POINT, Amount, format_money
from app.marks import translatable
from app.models import (
    DISPUTED_STATUSES,
    SETTLED_STATUSES,
    DisputeCase,
    DisputeStatus,
    DisputeType,
    KeyMode,
    LedgerAccount,
    MoneyOutcome,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.queueing import enqueue_after_commit
from app.services import audit, dispute_holds, ledger, locking
from app.services.disputes.allowances import (
    NOT_OPEN,
    acceptability,
    appealability,
    outcome_allowance,
)
from app.services.disputes.listing import CASE_PREFIX, case_object, get_case
from app.services.events import record_event
from app.services.ledger import Line
from app.services.state_machine import StateMachine
from app.services.transactions import lifecycle, payments, refund_funding
from app.services.transactions.charges import MAX_AMOUNT
from app.services.transactions.refund_totals import refunded_total

# A notification id from the dispute channel. The OpenAPI document publishes the pattern as
# written (ECMA-262, anchored), so it is applied with `fullmatch`: Python's `$` alone would
# also take a final newline.
EXTERNAL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MED_METHODS = ("scam", "unauthorized", "coercion", "invasion", "other")
MIN_APPEAL, MAX_APPEAL = 5, 2000
MAX_REASON = 2000
NOTICE_JOB = "app.jobs.disputes.send_dispute_notices"
HOLD, RELEASE, LOSS = "dispute_hold", "dispute_release", "dispute_loss"
WAITING_REFUND_ENDED = translatable(
    "Not sent: the payer's bank already returned the disputed amount (the dispute was lost)."
)
DECISIONS = {
    "rejected": (DisputeStatus.REJECTED, MoneyOutcome.LOST),
    "refunded_to_merchant": (DisputeStatus.CLOSED, MoneyOutcome.REFUNDED_TO_MERCHANT),
    "closed_without_refund": (DisputeStatus.CLOSED, MoneyOutcome.CLOSED_WITHOUT_REFUND),
}
S = DisputeStatus
# The contract's case states: the merchant appeals or accepts an open case; the dispute
# channel rejects or closes an open or appealed one. Decided cases never move again.
CASE_MACHINE = StateMachine(
    "dispute case",
    {
        S.OPEN: frozenset({S.APPEALED, S.ACCEPTED, S.REJECTED, S.CLOSED}),
        S.APPEALED: frozenset({S.REJECTED, S.CLOSED}),
    },
)
S_T = TransactionStatus
RETAINED, TO_PAYER = LedgerAccount.RETAINED, LedgerAccount.PROVIDER_CLEARING


@dataclass(frozen=True)
class DisputeNotice:
    """A dispute as the channel reports it; `external_id` identifies the notification, so a
    re-delivery finds the case it opened. `amount` None means the charge's amount."""

    external_id: str
    type: DisputeType = DisputeType.MED
    amount: int | None = None
    method: str | None = None
    reason: str | None = None
    response_deadline: datetime | None = None
    reference_id: str | None = None
    payer_name: str | None = None
    payer_document: str | None = None
    opened_at: datetime | None = None


# Opening


def open_case(
    transaction_id: str, notice: DisputeNotice, *, source: str
) -> tuple[DisputeCase, bool]:
    """The case for this notification, opened now or found (re-delivery); True when new.

    The transaction's row lock serialises notifications about it, so two deliveries of one
    notification at once open one case."""
    transaction = lifecycle.lock(transaction_id)
    existing = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.transaction_id == transaction.id,
            DisputeCase.external_id == notice.external_id,
        )
    )
    if existing is not None:
        return existing, False
    _check_notice(transaction, notice)
    now = utcnow()
    amount = transaction.amount if notice.amount is None else notice.amount
    mismatch = amount != transaction.amount
    case = DisputeCase(
        id=f"{CASE_PREFIX}{uuid.uuid4()}",
        account_id=transaction.account_id,
        mode=transaction.mode,
        transaction_id=transaction.id,
        external_id=notice.external_id,
        source=source,
        type=notice.type,
        status=S.OPEN,
        amount=amount,
        currency=transaction.currency,
        held_amount=0,
        hold_limit=None if mismatch else transaction.amount,
        amount_mismatch=mismatch,
        under_review=mismatch,
        method=notice.method,
        reason=notice.reason,
        reference_id=notice.reference_id or transaction.end_to_end_id,
        payer_name=notice.payer_name,
        payer_document=notice.payer_document,
        response_deadline=notice.response_deadline,
        opened_at=notice.opened_at or now,
        created_at=now,
        updated_at=now,
    )
    db.session.add(case)
    db.session.flush()
    if not mismatch:
        case.held_amount = dispute_holds.due_hold(case, transaction)
        _hold(case, transaction, now)
    _refresh_metadata(transaction, case, now)
    _record(case, "med_case.created")
    enqueue_after_commit(db.session(), DEFAULT_QUEUE, NOTICE_JOB, case.id)
    return case, True


def _hold(case: DisputeCase, transaction: Transaction, now: datetime) -> None:
    """The disputed amount leaves available for retained; the charge becomes disputed."""
    if case.held_amount:
        _post(case, HOLD, "Disputed amount held", LedgerAccount.AVAILABLE, LedgerAccount.RETAINED)
    lifecycle.transition(transaction, _disputed_status(transaction, case), at=now)


def _check_disputable(transaction: Transaction) -> None:
    if transaction.status not in SETTLED_STATUSES:
        raise Conflict(
            translatable("Only a paid charge can be disputed; this one is %(status)s."),
            values={"status": transaction.status},
            code="charge_not_disputable",
        )


def _check_notice(transaction: Transaction, notice: DisputeNotice) -> None:
    _check_disputable(transaction)
    if not EXTERNAL_ID.fullmatch(notice.external_id or ""):
        raise InvalidRequest(
            "external_id is 1 to 64 letters, digits, '_' or '-'.", param="external_id"
        )
    if notice.amount is not None and not 0 < notice.amount <= MAX_AMOUNT:
        raise InvalidRequest(
            f"amount is from {format_money(1, transaction.currency, DECIMAL_POINT)} to "
            f"{format_money(MAX_AMOUNT, transaction.currency, DECIMAL_POINT)}.",
            code="invalid_amount",
            param="amount",
        )
    if notice.method is not None and notice.method not in MED_METHODS:
        raise InvalidRequest(f"method is one of {', '.join(MED_METHODS)}.", param="method")
    if notice.reason is not None and len(notice.reason) > MAX_REASON:
        raise InvalidRequest(f"reason is at most {MAX_REASON} characters.", param="reason")


def _disputed_status(transaction: Transaction, case: DisputeCase) -> TransactionStatus:
    """A card chargeback is CHARGEBACK; every other dispute (MED included) is DISPUTE."""
    chargeback = case.type is DisputeType.CHARGEBACK
    if chargeback and transaction.status is TransactionStatus.APPROVED:
        return TransactionStatus.CHARGEBACK
    return TransactionStatus.DISPUTE


# The merchant's answers


def appeal(
    account_id: str, mode: KeyMode, case_id: str, reason: str, actor_user_id: str | None = None
) -> DisputeCase:
    """Contest an open case; the amount stays held until the decision."""
    text = reason.strip() if isinstance(reason, str) else ""
    if not MIN_APPEAL <= len(text) <= MAX_APPEAL:
        raise InvalidRequest(
            translatable("reason is %(min)s to %(max)s characters."),
            values={"min": MIN_APPEAL, "max": MAX_APPEAL},
            param="reason",
        )
    case = _lock(get_case(account_id, mode, case_id).id)
    appealability(case).require()
    now = utcnow()
    CASE_MACHINE.move(case, S.APPEALED)
    case.appeal_reason, case.appealed_at, case.updated_at = text, now, now
    _audit(case, actor_user_id, "med_case.appealed")
    _changed(case, now)
    return case


def accept(
    account_id: str, mode: KeyMode, case_id: str, actor_user_id: str | None = None
) -> DisputeCase:
    """Give up an open case: final, the held amount goes to the payer (`lost`)."""
    case = _lock(get_case(account_id, mode, case_id).id)
    acceptability(case).require()
    _audit(case, actor_user_id, "med_case.accepted")
    _finish(case, S.ACCEPTED, MoneyOutcome.LOST)
    return case


# The dispute channel's decisions (provider, sandbox, operations staff)


def request_evidence(case_id: str, actor_user_id: str | None = None) -> DisputeCase:
    """The platform asks the merchant for evidence (`evidence_requested_at`)."""
    case = _lock(case_id)
    if case is None:
        raise NotFound(translatable("No such dispute case."))
    if case.is_final:
        raise Conflict(f"The case is already {case.status}.", code=NOT_OPEN)
    now = utcnow()
    case.evidence_requested_at = case.updated_at = now
    _audit(case, actor_user_id, "med_case.evidence_requested")
    _changed(case, now)
    return case


def decide(
    case_id: str, decision: str, actor_user_id: str | None = None, note: str | None = None
) -> DisputeCase:
    """Apply the channel's decision to an open or appealed case: `rejected` (lost),
    `refunded_to_merchant` or `closed_without_refund` (both closed)."""
    if decision not in DECISIONS:
        raise InvalidRequest(f"decision is one of {', '.join(DECISIONS)}.", param="decision")
    case = _lock(case_id)
    if case is None:
        raise NotFound(translatable("No such dispute case."))
    if case.is_final:
        raise Conflict(f"The case is already {case.status}.", code=NOT_OPEN)
    status, outcome = DECISIONS[decision]
    outcome_allowance(case, outcome).require()
    case.decided_by = actor_user_id
    case.decision_note = (note or "").strip()[:500] or None
    _audit(case, actor_user_id, f"med_case.{decision}")
    _finish(case, status, outcome)
    return case


def confirm_amount(case_id: str, amount: int, actor_user_id: str | None) -> DisputeCase:
    """Operations settle a case whose reported amount differed: `amount` (at most what the
    merchant still has of the charge) is held now and the charge becomes disputed; from then
    on the case is decided like any other."""
    case = _lock(case_id)
    if case is None:
        raise NotFound(translatable("No such dispute case."))
    if case.is_final or not case.under_review:
        raise Conflict(
            translatable("Only an undecided case under review can be confirmed."), code=NOT_OPEN
        )
    transaction = lifecycle.lock(case.transaction_id)
    _check_disputable(transaction)
    unrefunded = transaction.amount - refunded_total(transaction)
    if not isinstance(amount, int) or not 0 < amount <= unrefunded:
        raise InvalidRequest(
            translatable(
                "amount is from %(min)s to %(max)s (the charge less its completed refunds)."
            ),
            values={
                "min": Amount(1, transaction.currency),
                "max": Amount(max(unrefunded, 0), transaction.currency),
            },
            code="invalid_amount",
            param="amount",
        )
    now = utcnow()
    case.hold_limit, case.under_review, case.updated_at = amount, False, now
    case.held_amount = dispute_holds.due_hold(case, transaction)
    _audit(case, actor_user_id, "med_case.amount_confirmed")
    _hold(case, transaction, now)
    _refresh_metadata(transaction, case, now)
    return case


def _finish(case: DisputeCase, status: DisputeStatus, outcome: MoneyOutcome) -> None:
    now = utcnow()
    CASE_MACHINE.move(case, status)
    case.money_outcome, case.closed_at, case.updated_at = outcome, now, now
    transaction = lifecycle.lock(case.transaction_id)
    won = outcome is MoneyOutcome.REFUNDED_TO_MERCHANT
    if case.held_amount and won:
        _post(case, RELEASE, "Dispute won, held amount returned", RETAINED, LedgerAccount.AVAILABLE)
    elif case.held_amount:
        _post(case, LOSS, "Dispute lost, held amount sent to the payer", RETAINED, TO_PAYER)
    if won and transaction.status in DISPUTED_STATUSES:
        _restore(transaction, now)
    elif not won:
        refund_funding.fail_waiting(transaction, WAITING_REFUND_ENDED)
    _refresh_metadata(transaction, case, now)
    if current_app.config["DISPUTE_OUTCOME_EVENTS"]:
        _record(case, "med_case.updated")
        _record(case, "med.resolved", {"money_outcome": str(outcome)})
    enqueue_after_commit(db.session(), DEFAULT_QUEUE, NOTICE_JOB, case.id)


def _restore(transaction: Transaction, now: datetime) -> None:
    """The charge is paid again (APPROVED for a card), or refunded when merchant refunds
    completed meanwhile cover it; quietly, since no `charge.*` (or payment) event follows
    from a dispute."""
    settled = S_T.APPROVED if transaction.paid_with == payments.CARD else S_T.PAID
    lifecycle.transition(transaction, settled, at=now, record_events=False)
    if refunded_total(transaction) >= transaction.amount:
        lifecycle.transition(transaction, S_T.REFUNDED, at=now, record_events=False)


# Shared steps


def _post(
    case: DisputeCase, kind: str, label: str, source: LedgerAccount, target: LedgerAccount
) -> None:
    ledger.post(
        account_id=case.account_id,
        mode=case.mode,
        currency=case.currency,
        kind=kind,
        reference_id=case.id,
        description=f"{label}: case {case.id} on transaction {case.transaction_id}",
        lines=[Line(source, -case.held_amount), Line(target, case.held_amount)],
    )


def _changed(case: DisputeCase, now: datetime) -> None:
    """A status change or evidence request: the charge's metadata and `med_case.updated`."""
    _refresh_metadata(lifecycle.lock(case.transaction_id), case, now)
    _record(case, "med_case.updated")


def _refresh_metadata(transaction: Transaction, case: DisputeCase, now: datetime) -> None:
    transaction.metadata_ = {**(transaction.metadata_ or {}), "med": med_metadata(case, now)}


def _record(case: DisputeCase, event_type: str, extra: dict | None = None) -> None:
    db.session.flush()
    record_event(
        case.account_id,
        case.mode,
        event_type,
        {"object": case_object(case)} | (extra or {}),
        subject_type="med_case",
        subject_id=case.id,
    )


def _audit(case: DisputeCase, actor_user_id: str | None, action: str) -> None:
    audit.record(
        account_id=case.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="med_case",
        subject_id=case.id,
    )


def _lock(case_id: str) -> DisputeCase | None:
    """The case, locked after its transaction: refunds lock the transaction first too, so a
    decision and a refund completing at once never deadlock."""
    transaction_id = db.session.scalar(
        sa.select(DisputeCase.transaction_id).where(DisputeCase.id == case_id)
    )
    if transaction_id is None:
        return None
    lifecycle.lock(transaction_id)
    return locking.lock(DisputeCase, case_id)
