"""The money oracle: what every balance, hold and status should be, from the money rules alone.

Written from the rules (docs/money-model.md), never from the service code: it imports nothing
from `app`, keeps its own books in plain integers, and is driven by the two state machines in
`test_money_model.py` (service layer and HTTP). Each step applies one event here and the same
event to the service; the machines then compare `Oracle.expected()` with what the database
holds (`tests/support/money_rows.py`).

The rules, as the oracle applies them:

- a payment of A with fees F credits pending with A - F and schedules one tranche of A - F;
  a charge with a due date is a payment of what its terms ask on the day it is paid
  (`due_charge_amount`), and everything after (refunds, holds) counts from that amount;
  a release moves each due tranche's remaining amount from pending to available;
- a refund of r is allowed while the payment is settled (PAID/APPROVED) and not disputed, for
  r <= A - (its refunds that are not FAILED). It is never refused for lack of money: funded at
  once when the payment's unreleased tranche pays it, or pays part and a positive available
  the rest (a negative available, after a hold, pays nothing); otherwise it waits (PENDING
  with a pending_reason) and moves nothing; the sweep funds waiting refunds (oldest first,
  each one that is covered, none of a payment whose case is undecided); the merchant may
  cancel one while it waits (FAILED, nothing moves);
- a cashout refund with passFeeToTenant also takes the Pix-out fee (to fees) when funded,
  tranche first like the amount, and a failure gives it back with the rest;
- a funded refund that completes leaves to the payer; one that fails (the sandbox fails
  refunds of 503,00) gives back what it took: the tranche part to the tranche while it is
  unreleased (else to available), the rest to available;
- a dispute on a settled payment holds A - (its completed refunds): available -> retained
  (available may go negative). While the case is undecided, each of the payment's refunds
  that completes releases its amount from the hold (retained -> available); a failure
  changes nothing in it. Won: the hold goes back to available. Lost (accepted, rejected
  after appeal, closed_without_refund): the hold goes to the payer and the payment's waiting
  refunds fail. An appeal moves no money;
- a Pix paid to a payer-locked charge by a bank that did not say who paid is held for
  review: nothing moves and it is no payment yet, so a refund of it is refused
  (transaction_not_refundable) and so is a dispute (charge_not_disputable). Released by
  staff, it becomes a payment of its amount like any other, its tranche due a settlement
  hold after the Pix arrived. Returned by staff, or its charge cancelled by the merchant, it
  goes back to the payer by an automatic return that never touches the merchant's books:
  nothing moves;
- a payout request moves nothing (refused when available < amount + fee); approval debits
  amount + fee from available (refused when available does not cover them); reject and
  cancel of a PENDING payout move nothing; processing completes it (money out) or, for
  503,00, fails it with amount + fee back to available.

Conservation, per wallet and platform-wide: money in from payers = money back to payers +
payouts + fees + available + pending + retained + money in flight (funded refunds and
approved payouts not yet final).
"""

from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction

# The sandbox's failing amount (503,00), restated from its documentation: refunds of it fail
# on the first poll and payouts of it are rejected.
FAILING_AMOUNT = 50_300

SETTLED, REFUNDED, DISPUTED = "settled", "refunded", "disputed"
WAITING, FUNDED, IN_PROGRESS, DONE, FAILED = (
    "waiting",
    "funded",
    "in_progress",
    "refunded",
    "failed",
)
OPEN, APPEALED, WON, LOST = "open", "appealed", "won", "lost"
UNDECIDED = frozenset({OPEN, APPEALED})
PENDING, APPROVED, PROCESSING, COMPLETED = "pending", "approved", "processing", "completed"
REJECTED, CANCELLED = "rejected", "cancelled"
PAYOUT_FAILED = "failed"
LOSING_DECISIONS = frozenset({"rejected", "closed_without_refund"})
DECISIONS = ("refunded_to_merchant", "rejected", "closed_without_refund")

# Refusal codes the API answers with (the contract, not the code).
CHARGE_DISPUTED = "charge_disputed"
NOT_REFUNDABLE = "transaction_not_refundable"
EXCEEDS = "refund_exceeds_refundable"
NOT_DISPUTABLE = "charge_not_disputable"
CASE_NOT_OPEN = "med_case_not_open"
INSUFFICIENT_FUNDS = "insufficient_funds"
NOT_PENDING = "withdrawal_not_pending"
NOT_CANCELLABLE = "withdrawal_not_cancellable"


# The terms of the machines' charges with a due date, restated as numbers: a fine of 2 % of
# the original once late, interest of 1 % a month (30 days) per calendar day late, 50
# centavos off per day paid early. The machine's due date is a business day in a month
# without national holidays, so no day moves.
DUE_FINE_PERCENT = 2
DUE_INTEREST_PERCENT_A_MONTH = 1
DUE_DISCOUNT_A_DAY = 50


def due_charge_amount(original: int, days_after_due: int) -> int:
    """What a Pix must carry `days_after_due` days after the due date (negative: early),
    each percentage part rounded once, half up, to the centavo."""
    if days_after_due <= 0:
        return original - DUE_DISCOUNT_A_DAY * -days_after_due
    fine = _half_up(Fraction(original * DUE_FINE_PERCENT, 100))
    interest = _half_up(
        Fraction(original * DUE_INTEREST_PERCENT_A_MONTH * days_after_due, 100 * 30)
    )
    return original + fine + interest


def _half_up(value: Fraction) -> int:
    return int(value + Fraction(1, 2)) if value >= 0 else -_half_up(-value)


class OracleBroken(AssertionError):
    """The model contradicts itself: a bug in the oracle (or in the rules), not the service."""


@dataclass
class Balances:
    available: int = 0
    pending: int = 0
    retained: int = 0

    def as_tuple(self) -> tuple[int, int, int]:
        return self.available, self.pending, self.retained


@dataclass
class Payment:
    key: str
    wallet: str
    amount: int
    fees: int
    tranche: int  # what the tranche still holds in pending until its release
    release_at: datetime | None
    released: bool = False
    status: str = SETTLED
    refunds: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)


@dataclass
class HeldPix:
    """A Pix a payer-locked charge holds for review: the payer's money, not the merchant's."""

    key: str
    wallet: str
    amount: int


@dataclass
class Refund:
    key: str
    payment: str
    amount: int
    state: str
    fee: int = 0  # the Pix-out fee a cashout with passFeeToTenant charges the merchant
    from_tranche: int = 0
    from_available: int = 0

    @property
    def total(self) -> int:
        """What funding it takes from the merchant: the amount and its fee."""
        return self.amount + self.fee


@dataclass
class Case:
    key: str
    payment: str
    hold: int
    state: str = OPEN


@dataclass
class Payout:
    key: str
    wallet: str
    amount: int
    fee: int
    state: str = PENDING


@dataclass(frozen=True)
class Expected:
    """Everything the database must agree with after a step."""

    wallets: dict[str, tuple[int, int, int]]
    holds: dict[str, int]
    case_states: dict[str, str]
    refund_states: dict[str, str]
    payout_states: dict[str, str]
    payment_states: dict[str, str]
    money_in: int
    to_payers: int
    paid_out: int
    fees: int
    in_flight: int


class Oracle:
    def __init__(self) -> None:
        self.wallets: dict[str, Balances] = {}
        self.payments: dict[str, Payment] = {}
        self.held: dict[str, HeldPix] = {}
        self.refunds: dict[str, Refund] = {}
        self.cases: dict[str, Case] = {}
        self.payouts: dict[str, Payout] = {}
        self.money_in = 0
        self.to_payers = 0
        self.paid_out = 0
        self.fees = 0

    # Settlement

    def wallet(self, key: str) -> Balances:
        return self.wallets.setdefault(key, Balances())

    def pay(self, wallet: str, key: str, amount: int, fees: int, release_at=None) -> None:
        net = amount - fees
        self.payments[key] = Payment(key, wallet, amount, fees, net, release_at)
        self.wallet(wallet).pending += net
        self.money_in += amount
        self.fees += fees

    def release_due(self, now: datetime) -> list[str]:
        """Release every tranche due at `now`; the payments released."""
        due = [
            p.key
            for p in self.payments.values()
            if not p.released and p.release_at is not None and p.release_at <= now
        ]
        for key in due:
            self._release(self.payments[key])
        return due

    def release_all(self) -> None:
        for payment in self.payments.values():
            if not payment.released:
                self._release(payment)

    def _release(self, payment: Payment) -> None:
        balances = self.wallet(payment.wallet)
        balances.pending -= payment.tranche
        balances.available += payment.tranche
        payment.tranche, payment.released = 0, True

    # Held for review

    def hold(self, wallet: str, key: str, amount: int) -> None:
        self.held[key] = HeldPix(key, wallet, amount)

    def held_refusals(self) -> tuple[str, str]:
        """What a refund and a dispute of a held Pix are refused with: it is no payment."""
        return NOT_REFUNDABLE, NOT_DISPUTABLE

    def release_held(self, key: str, fees: int, release_at: datetime | None = None) -> None:
        held = self.held.pop(key)
        self.pay(held.wallet, key, held.amount, fees, release_at)

    def return_held(self, key: str) -> None:
        del self.held[key]

    # Refunds

    def refundable(self, payment_key: str) -> int:
        payment = self.payments[payment_key]
        taken = sum(
            self.refunds[r].amount for r in payment.refunds if self.refunds[r].state != FAILED
        )
        return payment.amount - taken

    def refund_refusal(self, payment_key: str, amount: int) -> str | None:
        """The code a refund request of `amount` is refused with, or None when accepted."""
        payment = self.payments[payment_key]
        if payment.status == DISPUTED:
            return CHARGE_DISPUTED
        if payment.status != SETTLED:
            return NOT_REFUNDABLE
        remaining = self.refundable(payment_key)
        if remaining <= 0 or amount > remaining:
            return EXCEEDS
        return None

    def covers(self, refund: Refund) -> bool:
        """The payment's own unreleased tranche pays first, whatever the balance (the payer's
        own money going back); available, when positive, pays the rest."""
        payment = self.payments[refund.payment]
        own_tranche = 0 if payment.released else payment.tranche
        rest = max(refund.total - own_tranche, 0)
        return rest <= max(self.wallet(payment.wallet).available, 0)

    def request_refund(self, key: str, payment_key: str, amount: int, fee: int = 0) -> str:
        """Apply an accepted request; FUNDED or WAITING."""
        if self.refund_refusal(payment_key, amount) is not None:
            raise OracleBroken(f"refund {key} should have been refused")
        refund = Refund(key, payment_key, amount, WAITING, fee)
        self.refunds[key] = refund
        self.payments[payment_key].refunds.append(key)
        if self.covers(refund):
            self._fund(refund)
        return refund.state

    def _fund(self, refund: Refund) -> None:
        payment = self.payments[refund.payment]
        balances = self.wallet(payment.wallet)
        from_tranche = 0 if payment.released else min(refund.total, payment.tranche)
        payment.tranche -= from_tranche
        balances.pending -= from_tranche
        balances.available -= refund.total - from_tranche
        refund.from_tranche, refund.from_available = from_tranche, refund.total - from_tranche
        self.fees += refund.fee
        refund.state = FUNDED

    def fund_waiting(self) -> list[str]:
        """The sweep: oldest first, each waiting refund that is covered, none of a payment
        whose case is undecided; the refunds funded."""
        funded = []
        for refund in list(self.refunds.values()):  # insertion order: oldest first
            if refund.state != WAITING or self._undecided_case(refund.payment) is not None:
                continue
            if self.covers(refund):
                self._fund(refund)
                funded.append(refund.key)
        return funded

    def cancel_refund(self, key: str) -> bool:
        """The merchant cancels a waiting refund; False when it no longer waits (refused)."""
        refund = self.refunds[key]
        if refund.state != WAITING:
            return False
        refund.state = FAILED
        return True

    def submit(self, key: str) -> None:
        """The provider accepts a funded refund; a waiting one is not sent."""
        refund = self.refunds[key]
        if refund.state == FUNDED:
            refund.state = IN_PROGRESS

    def poll(self, key: str) -> None:
        """The provider's answer to a refund in progress: 503,00 fails, the rest complete."""
        refund = self.refunds[key]
        if refund.state != IN_PROGRESS:
            return
        if refund.amount == FAILING_AMOUNT:
            self._fail_funded(refund)
        else:
            self._complete(refund)

    def _complete(self, refund: Refund) -> None:
        payment = self.payments[refund.payment]
        refund.state = DONE
        self.to_payers += refund.amount
        case = self._undecided_case(payment.key)
        if case is not None:
            if case.hold < refund.amount:
                raise OracleBroken(f"case {case.key} holds {case.hold} < refund {refund.amount}")
            balances = self.wallet(payment.wallet)
            case.hold -= refund.amount
            balances.retained -= refund.amount
            balances.available += refund.amount
        if payment.status == SETTLED and self._completed(payment) >= payment.amount:
            payment.status = REFUNDED

    def _fail_funded(self, refund: Refund) -> None:
        payment = self.payments[refund.payment]
        balances = self.wallet(payment.wallet)
        if payment.released:
            balances.available += refund.total
        else:
            payment.tranche += refund.from_tranche
            balances.pending += refund.from_tranche
            balances.available += refund.from_available
        self.fees -= refund.fee
        refund.state = FAILED

    def _completed(self, payment: Payment) -> int:
        return sum(self.refunds[r].amount for r in payment.refunds if self.refunds[r].state == DONE)

    # Disputes

    def _undecided_case(self, payment_key: str) -> Case | None:
        for case_key in self.payments[payment_key].cases:
            if self.cases[case_key].state in UNDECIDED:
                return self.cases[case_key]
        return None

    def dispute_refusal(self, payment_key: str) -> str | None:
        return None if self.payments[payment_key].status == SETTLED else NOT_DISPUTABLE

    def open_dispute(self, key: str, payment_key: str) -> int:
        """A dispute of the whole amount on a settled payment; the hold."""
        if self.dispute_refusal(payment_key) is not None:
            raise OracleBroken(f"dispute {key} should have been refused")
        payment = self.payments[payment_key]
        hold = payment.amount - self._completed(payment)
        balances = self.wallet(payment.wallet)
        balances.available -= hold
        balances.retained += hold
        self.cases[key] = Case(key, payment_key, hold)
        payment.cases.append(key)
        payment.status = DISPUTED
        return hold

    def answer_refusal(self, key: str) -> str | None:
        """Appeal and acceptance need an OPEN case."""
        return None if self.cases[key].state == OPEN else CASE_NOT_OPEN

    def decision_refusal(self, key: str) -> str | None:
        return None if self.cases[key].state in UNDECIDED else CASE_NOT_OPEN

    def appeal(self, key: str) -> None:
        self.cases[key].state = APPEALED

    def accept(self, key: str) -> None:
        self._lose(self.cases[key])

    def decide(self, key: str, decision: str) -> None:
        case = self.cases[key]
        if decision in LOSING_DECISIONS:
            self._lose(case)
            return
        payment = self.payments[case.payment]
        balances = self.wallet(payment.wallet)
        balances.retained -= case.hold
        balances.available += case.hold
        case.state = WON
        payment.status = REFUNDED if self._completed(payment) >= payment.amount else SETTLED

    def _lose(self, case: Case) -> None:
        payment = self.payments[case.payment]
        self.wallet(payment.wallet).retained -= case.hold
        self.to_payers += case.hold
        case.state = LOST
        for refund_key in payment.refunds:
            if self.refunds[refund_key].state == WAITING:
                self.refunds[refund_key].state = FAILED

    # Payouts

    def payout_request_refusal(self, wallet: str, amount: int, fee: int) -> str | None:
        if self.wallet(wallet).available < amount + fee:
            return INSUFFICIENT_FUNDS
        return None

    def request_payout(self, key: str, wallet: str, amount: int, fee: int) -> None:
        self.payouts[key] = Payout(key, wallet, amount, fee)

    def approval_refusal(self, key: str) -> str | None:
        payout = self.payouts[key]
        if payout.state != PENDING:
            return NOT_PENDING
        if self.wallet(payout.wallet).available < payout.amount + payout.fee:
            return INSUFFICIENT_FUNDS
        return None

    def approve(self, key: str) -> None:
        payout = self.payouts[key]
        self.wallet(payout.wallet).available -= payout.amount + payout.fee
        self.fees += payout.fee
        payout.state = APPROVED

    def reject(self, key: str) -> None:
        self.payouts[key].state = REJECTED

    def cancel_payout(self, key: str) -> None:
        self.payouts[key].state = CANCELLED

    def process(self, key: str) -> None:
        """Processing ends it: completed, or rejected by the acquirer for 503,00."""
        payout = self.payouts[key]
        if payout.state != APPROVED:
            return
        if payout.amount == FAILING_AMOUNT:
            self.wallet(payout.wallet).available += payout.amount + payout.fee
            self.fees -= payout.fee
            payout.state = PAYOUT_FAILED
        else:
            self.paid_out += payout.amount
            payout.state = COMPLETED

    # What the database must show

    def in_flight(self) -> int:
        refunds = sum(r.amount for r in self.refunds.values() if r.state in (FUNDED, IN_PROGRESS))
        payouts = sum(p.amount for p in self.payouts.values() if p.state in (APPROVED, PROCESSING))
        return refunds + payouts

    def expected(self) -> Expected:
        self.check_conservation()
        return Expected(
            wallets={key: b.as_tuple() for key, b in self.wallets.items()},
            holds={key: c.hold for key, c in self.cases.items()},
            case_states={key: c.state for key, c in self.cases.items()},
            refund_states={key: r.state for key, r in self.refunds.items()},
            payout_states={key: p.state for key, p in self.payouts.items()},
            payment_states={key: p.status for key, p in self.payments.items()},
            money_in=self.money_in,
            to_payers=self.to_payers,
            paid_out=self.paid_out,
            fees=self.fees,
            in_flight=self.in_flight(),
        )

    def check_conservation(self) -> None:
        """The model's own books balance (else the oracle, not the service, is wrong)."""
        balances = sum(sum(b.as_tuple()) for b in self.wallets.values())
        out = self.to_payers + self.paid_out + self.fees + balances + self.in_flight()
        if out != self.money_in:
            raise OracleBroken(f"oracle leaks: in {self.money_in}, accounted {out}")
        for payment in self.payments.values():
            if payment.tranche < 0 or (payment.released and payment.tranche):
                raise OracleBroken(f"tranche of {payment.key} is {payment.tranche}")
        for case in self.cases.values():
            if case.hold < 0:
                raise OracleBroken(f"case {case.key} holds {case.hold}")
