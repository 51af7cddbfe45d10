"""What an undecided dispute case holds: exactly what is at risk, at every step.

A case may hold at most its `hold_limit` (the charge's amount, or what operations confirmed
for a case reported with another amount), less what the merchant's completed refunds
already sent back to the payer. A refund still in flight when the case opens is held as if
it will fail: if it fails nothing is owed, and when it completes `follow_refunds` releases
the surplus. A decision then settles exactly the hold (`disputes`). `check` proves the rule
for every undecided case, and that each wallet's retained balance is their holds.
"""

import uuid
from collections import Counter

import sqlalchemy as sa

from app.extensions import db
from app.models import DisputeCase, DisputeStatus, LedgerAccount, Refund, Transaction, Wallet
from app.services import ledger
from app.services.ledger import Line
from app.services.transactions.refund_totals import refunded_total

UNDECIDED = (DisputeStatus.OPEN, DisputeStatus.APPEALED)
REFUND_RELEASE = "dispute_hold_refunded"
_RELEASE_NAMESPACE = uuid.UUID("5f0c3a52-8b61-4d0e-9a57-2f4c1f1d9b7e")


def due_hold(case: DisputeCase, transaction: Transaction) -> int:
    """What the case must hold now (0 while its amount awaits confirmation)."""
    if case.hold_limit is None:
        return 0
    return max(min(case.hold_limit, transaction.amount - refunded_total(transaction)), 0)


def follow_refunds(transaction: Transaction, refund: Refund) -> None:
    """`refund` of the locked `transaction` just completed: each undecided case releases
    the part of its hold that the refund already returned to the payer."""
    cases = db.session.scalars(
        sa.select(DisputeCase)
        .where(DisputeCase.transaction_id == transaction.id, DisputeCase.status.in_(UNDECIDED))
        .order_by(DisputeCase.created_at)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    for case in cases:
        surplus = case.held_amount - due_hold(case, transaction)
        if surplus <= 0:
            continue
        ledger.post(
            account_id=case.account_id,
            mode=case.mode,
            currency=case.currency,
            kind=REFUND_RELEASE,
            reference_id=str(uuid.uuid5(_RELEASE_NAMESPACE, f"{case.id}:{refund.id}")),
            description=f"Refund {refund.id} completed: hold of case {case.id} reduced",
            lines=[Line(LedgerAccount.RETAINED, -surplus), Line(LedgerAccount.AVAILABLE, surplus)],
        )
        case.held_amount -= surplus


def check() -> list[str]:
    """Every undecided case whose hold differs from what is at risk, and every wallet whose
    retained balance is not the sum of its undecided cases' holds."""
    problems = []
    held_per_wallet: Counter = Counter()
    rows = db.session.execute(
        sa.select(DisputeCase, Transaction)
        .join(Transaction, Transaction.id == DisputeCase.transaction_id)
        .where(DisputeCase.status.in_(UNDECIDED))
        .order_by(DisputeCase.id)
    )
    for case, transaction in rows:
        due = due_hold(case, transaction)
        if case.held_amount != due:
            problems.append(f"case {case.id} holds {case.held_amount} but {due} is at risk")
        held_per_wallet[(case.account_id, case.mode, case.currency)] += case.held_amount
    for wallet in db.session.scalars(sa.select(Wallet).order_by(Wallet.id)):
        held = held_per_wallet[(wallet.account_id, wallet.mode, wallet.currency)]
        if wallet.retained != held:
            problems.append(
                f"wallet {wallet.id} ({wallet.mode} {wallet.currency}) retains "
                f"{wallet.retained} but its undecided cases hold {held}"
            )
    return problems
