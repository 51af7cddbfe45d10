"""What the database says about money, in the money oracle's terms (`tests/money/oracle.py`).

`observe()` reads the wallets, cases, refunds, payouts and paid transactions of test mode and
sums the platform-wide flows from the business records (not from the ledger), so
`check_against` can compare them with the oracle's expectation and prove conservation on
the database's own numbers; the ledger's proof (`ledger.check`) is asserted beside them.
"""

from dataclasses import dataclass

import sqlalchemy as sa

from app.extensions import db
from app.models import (
    DisputeCase,
    KeyMode,
    MoneyOutcome,
    Payout,
    PayoutStatus,
    Refund,
    RefundStatus,
    Transaction,
    TransactionStatus,
    Wallet,
)
from app.services import ledger
from tests.money import oracle as o

PAYMENT_STATES = {
    TransactionStatus.PAID: o.SETTLED,
    TransactionStatus.APPROVED: o.SETTLED,
    TransactionStatus.REFUNDED: o.REFUNDED,
    TransactionStatus.DISPUTE: o.DISPUTED,
    TransactionStatus.CHARGEBACK: o.DISPUTED,
}
REFUND_STATES = {
    RefundStatus.IN_PROGRESS: o.IN_PROGRESS,
    RefundStatus.REFUNDED: o.DONE,
    RefundStatus.FAILED: o.FAILED,
}
PAYOUT_STATES = {status: status.value.lower() for status in PayoutStatus}
TO_PAYER = (MoneyOutcome.LOST, MoneyOutcome.CLOSED_WITHOUT_REFUND)
PAYOUT_DEBITED = (PayoutStatus.APPROVED, PayoutStatus.PROCESSING)
PENDING_REASONS = {"charge_pending", "insufficient_funds"}


@dataclass(frozen=True)
class Observed(o.Expected):
    """The oracle's figures as the database has them, and what only the database can say."""

    pending_reasons: dict[str, str | None]
    ledger_problems: list[str]

    @property
    def balances(self) -> int:
        return sum(sum(balance) for balance in self.wallets.values())


def _refund_state(refund: Refund) -> str:
    if refund.status is RefundStatus.PENDING:
        return o.FUNDED if refund.pending_reason is None else o.WAITING
    return REFUND_STATES[refund.status]


def _case_state(case: DisputeCase) -> str:
    if case.money_outcome is None:
        return o.APPEALED if case.status.value == "appealed" else o.OPEN
    return o.WON if case.money_outcome is MoneyOutcome.REFUNDED_TO_MERCHANT else o.LOST


def observe() -> Observed:
    """The database now (call inside an app context, after the step committed)."""
    db.session.expire_all()
    test = KeyMode.TEST
    wallets = {
        w.account_id: (w.available, w.pending, w.retained)
        for w in db.session.scalars(sa.select(Wallet).where(Wallet.mode == test))
    }
    cases = db.session.scalars(sa.select(DisputeCase).where(DisputeCase.mode == test)).all()
    refunds = db.session.scalars(
        sa.select(Refund).where(Refund.mode == test, Refund.automatic.is_(False))
    ).all()
    payouts = db.session.scalars(sa.select(Payout).where(Payout.mode == test)).all()
    paid = db.session.scalars(
        sa.select(Transaction).where(Transaction.mode == test, Transaction.paid_at.is_not(None))
    ).all()
    refund_states = {r.id: _refund_state(r) for r in refunds}
    funded = {o.FUNDED, o.IN_PROGRESS}
    return Observed(
        wallets=wallets,
        holds={c.id: c.held_amount for c in cases},
        case_states={c.id: _case_state(c) for c in cases},
        refund_states=refund_states,
        pending_reasons={r.id: r.pending_reason for r in refunds},
        payout_states={p.id: PAYOUT_STATES[p.status] for p in payouts},
        payment_states={t.id: PAYMENT_STATES.get(t.status, str(t.status)) for t in paid},
        money_in=sum(t.amount for t in paid),
        to_payers=sum(r.amount for r in refunds if r.status is RefundStatus.REFUNDED)
        + sum(c.held_amount for c in cases if c.money_outcome in TO_PAYER),
        paid_out=sum(p.amount for p in payouts if p.status is PayoutStatus.COMPLETED),
        fees=sum(t.provider_fee + t.platform_fee for t in paid)
        + sum(p.fee for p in payouts if p.status in (*PAYOUT_DEBITED, PayoutStatus.COMPLETED))
        + sum(r.fee for r in refunds if refund_states[r.id] in (*funded, o.DONE)),
        in_flight=sum(r.amount for r in refunds if refund_states[r.id] in funded)
        + sum(p.amount for p in payouts if p.status in PAYOUT_DEBITED),
        ledger_problems=ledger.check(),
    )


def check_against(expected: o.Expected, observed: Observed) -> None:
    """Every difference between the oracle and the database, as one assertion."""
    problems = list(observed.ledger_problems)
    for name in ("wallets", "holds", "case_states", "refund_states", "payout_states"):
        want, got = getattr(expected, name), getattr(observed, name)
        missing = (0, 0, 0) if name == "wallets" else None  # a wallet is made on first use
        for key in sorted(set(want) | set(got)):
            if want.get(key, missing) != got.get(key, missing):
                problems.append(f"{name}[{key}]: oracle {want.get(key)}, database {got.get(key)}")
    for key, state in expected.payment_states.items():
        if observed.payment_states.get(key) != state:
            problems.append(
                f"payment {key}: oracle {state}, database {observed.payment_states.get(key)}"
            )
    for key, state in observed.refund_states.items():
        reason = observed.pending_reasons[key]
        if (state == o.WAITING) != (reason in PENDING_REASONS):
            problems.append(f"refund {key} is {state} with pending_reason {reason!r}")
    for name in ("money_in", "to_payers", "paid_out", "fees", "in_flight"):
        want, got = getattr(expected, name), getattr(observed, name)
        if want != got:
            problems.append(f"{name}: oracle {want}, database {got}")
    accounted = (
        observed.to_payers
        + observed.paid_out
        + observed.fees
        + observed.balances
        + observed.in_flight
    )
    if accounted != observed.money_in:
        problems.append(
            f"conservation: {observed.money_in} in from payers, {accounted} accounted for "
            f"(to payers {observed.to_payers}, payouts {observed.paid_out}, fees "
            f"{observed.fees}, balances {observed.balances}, in flight {observed.in_flight})"
        )
    assert not problems, "the database disagrees with the money oracle:\n  " + "\n  ".join(problems)
