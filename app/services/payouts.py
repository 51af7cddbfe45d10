"""Payouts (wire name: withdrawals): request, approval, processing, and every way they end.

One transition table and one `_transition` function, as for charges. Money moves only at
three points, each a unique ledger posting so it can never happen twice:

- approval debits amount + fee from `available`, under the wallet's row lock, and refuses
  when the balance no longer covers both (no partial debit, never below zero);
- completion moves the amount from payout clearing to the provider;
- failure (the acquirer rejects) returns amount + fee to `available`, atomically.

A request is never debited while PENDING; REJECTED and CANCELLED never touch the wallet.
Processing runs in an RQ job (enqueued after the approval commits) through the provider's
payout call; a periodic sweep picks up approvals whose job never ran.
"""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

import sqlalchemy as sa
from flask import current_app

from app.business_days import SAO_PAULO
from app.errors import ApiError, Conflict, InvalidRequest, NotFound, PermissionDenied
from app.extensions import MONEY_QUEUE, db
from app.formats.payouts import payout_object, withdrawal_event_data
from app.models import (
    Account,
    KeyMode,
    LedgerAccount,
    Membership,
    Withdrawal,
    WithdrawalStatus,
    WithdrawalType,
)
from app.models.base import utcnow
from app.pix import keys
from app.pix.documents import strip_formatting, tax_id_kind
from app.providers import payout_provider_for, provider_named
from app.providers.base import PayoutRejected, PayoutRequest
from app.queueing import enqueue_after_commit
from app.services import accounts, audit, fees, ledger, locking, tenancy, wallets
from app.services.allowances import Allowance, manager_allowance, refused
from app.services.events import record_event
from app.services.ledger import Line
from app.services.paging import paged
from app.services.state_machine import StateMachine

W = WithdrawalStatus
ROLE_REQUIRED = "WITHDRAWAL_ROLE_REQUIRED"
INSUFFICIENT_FUNDS = "insufficient_funds"
BRL = "BRL"
CRYPTO_NETWORK = "BSC"
CRYPTO_CURRENCY = "USDT"
BEP20_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
BANK_CODE = re.compile(r"[0-9]{3}")
AGENCY = re.compile(r"[0-9]{1,5}(-[0-9Xx])?")
BANK_ACCOUNT_NUMBER = re.compile(r"[0-9]{1,12}-?[0-9Xx]")
MAX_DESCRIPTION = 500
STUCK_AFTER = timedelta(minutes=5)
JOB_GRACE = timedelta(minutes=1)  # an approval's own job normally runs well within this
PROCESS_JOB = "app.jobs.payouts.process_payout"

TRANSITIONS: dict[WithdrawalStatus, frozenset[WithdrawalStatus]] = {
    W.PENDING: frozenset({W.APPROVED, W.REJECTED, W.CANCELLED}),
    W.APPROVED: frozenset({W.PROCESSING}),
    W.PROCESSING: frozenset({W.COMPLETED, W.FAILED}),
}
PAYOUT_MACHINE = StateMachine("withdrawal", TRANSITIONS)
EVENTS_ON_ENTRY: dict[WithdrawalStatus, tuple[str, ...]] = {
    W.PENDING: ("payout.created", "withdrawal.created"),
    W.COMPLETED: ("payout.paid", "withdrawal.completed"),
    W.FAILED: ("payout.failed", "withdrawal.failed"),
    W.REJECTED: ("payout.failed", "withdrawal.failed"),
    W.CANCELLED: ("payout.failed", "withdrawal.failed"),
}
DESTINATION_FIELDS = {
    "PIX": {"pixKey", "pixKeyType"},
    "TED": {"bankAccount"},
    "CRYPTO": {"cryptoAddress", "cryptoNetwork", "cryptoCurrency"},
}
LISTING_ORDER = (Withdrawal.created_at.desc(), Withdrawal.id.desc())  # newest first
# Ledger posting kinds, unique per payout.
DEBIT, COMPLETION, REFUND = "payout_debit", "payout_completion", "payout_refund"


@dataclass(frozen=True)
class NewPayout:
    type: str
    amount: int
    currency: str
    pix_key: str | None = None
    pix_key_type: str | None = None
    bank_account: dict | None = None
    crypto_address: str | None = None
    crypto_network: str | None = None
    crypto_currency: str | None = None
    description: str | None = None
    test: bool = False
    strict_cnpj: bool = True
    destination_fields: set[str] = field(default_factory=set)


def request_payout(membership: Membership, new: NewPayout) -> Withdrawal:
    """Create a PENDING payout after every check that can be made before any debit.

    Accounts flagged `withdrawals_auto_approve` have BRL payouts approved at once up to their
    threshold. The account row is locked first, so concurrent requests cannot together pass
    the daily cap.
    """
    accounts.require_manager(
        membership, "Only the account's OWNER or ADMIN may request payouts.", ROLE_REQUIRED
    )
    account = locking.lock(Account, membership.account_id)
    mode = KeyMode.TEST if new.test else KeyMode.LIVE
    destination = _destination(new, account)
    provider = payout_provider_for(mode)
    fee = fees.payout_fee(new.type, new.amount)
    if new.amount <= fee:
        raise InvalidRequest(
            f"The amount must be more than the payout fee ({fee}).",
            code="invalid_amount",
            param="amount",
        )
    if new.currency == BRL:
        _check_caps(account, mode, new.amount)
    _check_covered(account.id, mode, new.currency, new.amount + fee, locked=False)
    withdrawal = Withdrawal(
        account_id=account.id,
        mode=mode,
        status=W.PENDING,
        type=WithdrawalType(new.type),
        amount=new.amount,
        fee=fee,
        currency=new.currency,
        description=new.description,
        requested_by_user_id=membership.user_id,
        provider=provider.name,
        **destination,
    )
    db.session.add(withdrawal)
    db.session.flush()
    _record_events(withdrawal, None)
    if _auto_approves(account, withdrawal):
        _approve(withdrawal, actor_user_id=None, refusal=InvalidRequest)
    return withdrawal


def approve(withdrawal_id: str, actor_user_id: str) -> Withdrawal:
    """Staff approval: debits amount + fee now, or refuses (409) if the balance no longer
    covers them; processing starts after the commit."""
    withdrawal = _lock(withdrawal_id)
    _refuse_own_account(withdrawal, actor_user_id)
    _approve(withdrawal, actor_user_id)
    return withdrawal


def reject(withdrawal_id: str, actor_user_id: str, reason: str | None) -> Withdrawal:
    """Staff refusal of a PENDING payout; nothing was debited, nothing moves."""
    withdrawal = _lock(withdrawal_id)
    _refuse_own_account(withdrawal, actor_user_id)
    _require_pending(withdrawal, "rejected")
    withdrawal.decided_by_user_id = actor_user_id
    withdrawal.failure_reason = reason or "Rejected by the platform's review."
    _transition(withdrawal, W.REJECTED)
    _audit(withdrawal, actor_user_id, "payout.rejected")
    return withdrawal


def cancel(membership: Membership, withdrawal_id: str) -> Withdrawal:
    """The merchant withdraws a request, only while PENDING (nothing was debited)."""
    withdrawal = _lock(withdrawal_id)
    if withdrawal.account_id != membership.account_id:
        raise NotFound("No such withdrawal.")
    cancellability(withdrawal, membership).require()
    _transition(withdrawal, W.CANCELLED)
    _audit(withdrawal, membership.user_id, "payout.cancelled")
    return withdrawal


def cancellability(withdrawal: Withdrawal, membership: Membership) -> Allowance:
    """May this member withdraw the request? An OWNER or ADMIN, while it is PENDING: once
    approved, its money is debited and on its way."""
    role = manager_allowance(
        membership, "Only the account's OWNER or ADMIN may cancel payouts.", ROLE_REQUIRED
    )
    if withdrawal.status is W.PENDING:
        return role
    not_pending = Conflict(
        f"Only a PENDING withdrawal can be cancelled; this one is {withdrawal.status}.",
        code="withdrawal_not_cancellable",
    )
    return role & refused(not_pending)


def start_processing(withdrawal_id: str, now: datetime | None = None) -> Withdrawal | None:
    """Claim a payout to send: APPROVED → PROCESSING, or a PROCESSING one whose sender has
    been silent for STUCK_AFTER (its worker died; the provider call is idempotent). None when
    someone else is sending it or there is nothing to send."""
    now = now or utcnow()
    withdrawal = _lock(withdrawal_id)
    if withdrawal.status is W.APPROVED:
        _transition(withdrawal, W.PROCESSING)
        return withdrawal
    if withdrawal.status is W.PROCESSING and withdrawal.updated_at <= now - STUCK_AFTER:
        withdrawal.updated_at = now
        return withdrawal
    return None


def send(withdrawal: Withdrawal) -> None:
    """Ask the provider to pay out (idempotent by our id), then settle the outcome. Only a
    definitive rejection refunds; an unknown outcome (ProviderError) propagates and the
    payout stays PROCESSING until the sweep retries it."""
    provider = provider_named(withdrawal.provider, withdrawal.mode)
    request = PayoutRequest(
        reference=withdrawal.id,
        payout_type=str(withdrawal.type),
        amount=withdrawal.amount,
        currency=withdrawal.currency,
        destination=_destination_of(withdrawal),
        requested_at=withdrawal.created_at,
    )
    try:
        sent = provider.payout(request)
    except PayoutRejected as rejection:
        _fail(withdrawal.id, rejection.message)
        return
    _complete(withdrawal.id, sent.reference)


def due_for_processing(now: datetime | None = None, limit: int = 100) -> list[str]:
    """Payouts approved a while ago whose job never ran (Redis was down), and payouts stuck
    in PROCESSING (their worker died), to (re)send; fresh approvals are left to their job."""
    now = now or utcnow()
    return db.session.scalars(
        sa.select(Withdrawal.id)
        .where(
            sa.or_(
                sa.and_(Withdrawal.status == W.APPROVED, Withdrawal.updated_at <= now - JOB_GRACE),
                sa.and_(
                    Withdrawal.status == W.PROCESSING, Withdrawal.updated_at <= now - STUCK_AFTER
                ),
            ),
        )
        .order_by(Withdrawal.updated_at)
        .limit(limit)
    ).all()


def get(account_id: str, withdrawal_id: str) -> Withdrawal:
    return tenancy.owned(Withdrawal, withdrawal_id, "No such withdrawal.", account_id=account_id)


def list_payouts(
    account_id: str, mode: KeyMode | None, status: str | None, page: int, limit: int
) -> tuple[list[Withdrawal], int]:
    """One page (newest first) and the total matching; `mode=None` lists both modes."""
    listing = sa.select(Withdrawal).where(*_listing_conditions(account_id, mode, status))
    found = paged(listing.order_by(*LISTING_ORDER), page, limit)
    return found.rows, found.total


def payout_rows(
    account_id: str, mode: KeyMode | None, status: str | None, chunk_size: int
) -> Iterator[Withdrawal]:
    """Every payout `list_payouts` pages through, in its order, for an export: one query read
    `chunk_size` rows at a time (`yield_per`), so a long history never sits in memory."""
    yield from db.session.scalars(
        sa.select(Withdrawal)
        .where(*_listing_conditions(account_id, mode, status))
        .order_by(*LISTING_ORDER)
        .execution_options(yield_per=chunk_size)
    )


def pending_review(limit: int = 100) -> list[Withdrawal]:
    """PENDING payouts of every account, oldest first: the back-office approval queue."""
    return list(
        db.session.scalars(
            sa.select(Withdrawal)
            .where(Withdrawal.status == W.PENDING)
            .order_by(Withdrawal.created_at, Withdrawal.id)
            .limit(limit)
        )
    )


def _listing_conditions(account_id: str, mode: KeyMode | None, status: str | None) -> list:
    conditions = [Withdrawal.account_id == account_id]
    if mode is not None:
        conditions.append(Withdrawal.mode == mode)
    if status is not None:
        conditions.append(Withdrawal.status == WithdrawalStatus(status))
    return conditions


def _require_pending(withdrawal: Withdrawal, action: str) -> None:
    if withdrawal.status is not W.PENDING:
        raise Conflict(
            f"Only a PENDING withdrawal can be {action}; this one is {withdrawal.status}.",
            code="withdrawal_not_pending",
        )


def _refuse_own_account(withdrawal: Withdrawal, actor_user_id: str) -> None:
    """Four eyes: staff never decide a payout they asked for or of an account they belong to."""
    if withdrawal.requested_by_user_id == actor_user_id or accounts.active_membership(
        actor_user_id, withdrawal.account_id
    ):
        raise PermissionDenied(
            "Staff may not decide payouts of an account they belong to.",
            code="self_approval_forbidden",
        )


def _auto_approves(account: Account, withdrawal: Withdrawal) -> bool:
    """Flagged accounts skip approval for BRL payouts up to their threshold."""
    threshold = account.withdrawals_auto_approve_threshold
    if threshold is None:
        threshold = current_app.config["WITHDRAWALS_AUTO_APPROVE_THRESHOLD"]
    return (
        account.withdrawals_auto_approve
        and withdrawal.currency == BRL
        and withdrawal.amount <= threshold
    )


def _approve(
    withdrawal: Withdrawal, actor_user_id: str | None, refusal: type[ApiError] = Conflict
) -> None:
    _require_pending(withdrawal, "approved")
    total = withdrawal.wallet_debit
    _check_covered(
        withdrawal.account_id,
        withdrawal.mode,
        withdrawal.currency,
        total,
        locked=True,
        refusal=refusal,
    )
    ledger.post(
        account_id=withdrawal.account_id,
        mode=withdrawal.mode,
        currency=withdrawal.currency,
        kind=DEBIT,
        reference_id=withdrawal.id,
        description=f"Payout {withdrawal.id}",
        lines=[
            Line(LedgerAccount.AVAILABLE, -total),
            Line(LedgerAccount.PAYOUT_CLEARING, withdrawal.amount),
            Line(LedgerAccount.PLATFORM_FEES, withdrawal.fee),
        ],
    )
    withdrawal.decided_by_user_id = actor_user_id
    _transition(withdrawal, W.APPROVED)
    _audit(withdrawal, actor_user_id, "payout.approved")
    enqueue_after_commit(db.session(), MONEY_QUEUE, PROCESS_JOB, withdrawal.id)


def _complete(withdrawal_id: str, reference: str) -> None:
    withdrawal = _book_outcome(
        withdrawal_id,
        COMPLETION,
        f"settled ({reference})",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, w.amount),
        ],
    )
    if withdrawal is not None:
        withdrawal.provider_reference = reference
        withdrawal.completed_at = utcnow()
        _transition(withdrawal, W.COMPLETED)


def _fail(withdrawal_id: str, reason: str) -> None:
    """The acquirer rejected it: amount + fee go back to `available` in one posting."""
    withdrawal = _book_outcome(
        withdrawal_id,
        REFUND,
        "rejected by the acquirer: refund",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PLATFORM_FEES, -w.fee),
            Line(LedgerAccount.AVAILABLE, w.wallet_debit),
        ],
    )
    if withdrawal is not None:
        withdrawal.failure_reason = reason
        _transition(withdrawal, W.FAILED)


def _book_outcome(
    withdrawal_id: str, kind: str, what: str, lines: Callable[[Withdrawal], list[Line]]
) -> Withdrawal | None:
    """Lock a PROCESSING payout and post its outcome; None if it is no longer processing."""
    withdrawal = _lock(withdrawal_id)
    if withdrawal.status is not W.PROCESSING:
        return None
    ledger.post(
        account_id=withdrawal.account_id,
        mode=withdrawal.mode,
        currency=withdrawal.currency,
        kind=kind,
        reference_id=withdrawal.id,
        description=f"Payout {withdrawal.id} {what}",
        lines=lines(withdrawal),
    )
    return withdrawal


def _transition(withdrawal: Withdrawal, to: WithdrawalStatus) -> None:
    previous = PAYOUT_MACHINE.move(withdrawal, to)
    withdrawal.updated_at = utcnow()
    _record_events(withdrawal, previous)


def _record_events(withdrawal: Withdrawal, previous: WithdrawalStatus | None) -> None:
    at = withdrawal.updated_at or utcnow()
    for event_type in EVENTS_ON_ENTRY.get(withdrawal.status, ()):
        data = (
            {"object": payout_object(withdrawal)}
            if event_type.startswith("payout.")
            else withdrawal_event_data(withdrawal, previous, at)
        )
        record_event(
            withdrawal.account_id,
            withdrawal.mode,
            event_type,
            data,
            subject_type="withdrawal",
            subject_id=withdrawal.id,
        )


def _lock(withdrawal_id: str) -> Withdrawal:
    withdrawal = locking.lock(Withdrawal, withdrawal_id)
    if withdrawal is None:
        raise NotFound("No such withdrawal.")
    return withdrawal


def _check_covered(
    account_id: str,
    mode: KeyMode,
    currency: str,
    total: int,
    *,
    locked: bool,
    refusal: type[ApiError] = InvalidRequest,
) -> None:
    """The wallet must cover amount + fee. Before a debit the wallet row is locked, so two
    approvals can never both spend the same money; a request only pre-checks."""
    if locked:
        available = ledger.locked_wallet(account_id, mode, currency).available
    else:
        available = wallets.balance(account_id, mode, currency).available
    if available < total:
        raise refusal(
            f"The available balance ({available}) does not cover the amount plus fee ({total}).",
            code=INSUFFICIENT_FUNDS,
            param="amount" if refusal is InvalidRequest else None,
        )


def _check_caps(account: Account, mode: KeyMode, amount: int) -> None:
    cap = account.payout_transaction_cap
    if cap is None:
        cap = current_app.config["PAYOUT_TRANSACTION_CAP"]
    if amount > cap:
        raise InvalidRequest(
            f"A payout may be at most {cap} centavos under this account's contract.",
            code="payout_amount_limit_exceeded",
            param="amount",
        )
    daily_cap = account.payout_daily_cap
    if daily_cap is None:
        daily_cap = cap * current_app.config["PAYOUT_DAILY_CAP_MULTIPLIER"]
    today = datetime.combine(utcnow().astimezone(SAO_PAULO).date(), time.min, tzinfo=SAO_PAULO)
    requested_today = db.session.scalar(
        sa.select(sa.func.coalesce(sa.func.sum(Withdrawal.amount), 0)).where(
            Withdrawal.account_id == account.id,
            Withdrawal.mode == mode,
            Withdrawal.currency == BRL,
            Withdrawal.created_at >= today,
            Withdrawal.status.not_in((W.REJECTED, W.CANCELLED, W.FAILED)),
        )
    )
    if requested_today + amount > daily_cap:
        raise InvalidRequest(
            f"Payouts today would exceed the daily limit of {daily_cap} centavos.",
            code="payout_daily_limit_exceeded",
            param="amount",
        )


def _destination(new: NewPayout, account: Account) -> dict:
    """The destination columns for the payout's type, checked before anything is created."""
    extras = sorted(new.destination_fields - DESTINATION_FIELDS[new.type])
    if extras:
        raise InvalidRequest(f"{extras[0]} does not apply to {new.type} payouts.", param=extras[0])
    if new.type == "CRYPTO":
        return _crypto_destination(new)
    if new.currency != BRL:
        raise InvalidRequest(f"{new.type} payouts are in BRL.", param="currency")
    if new.type == "PIX":
        return _pix_destination(new, account)
    return {"bank_account": _bank_account(new.bank_account)}


def _pix_destination(new: NewPayout, account: Account) -> dict:
    if not new.pix_key:
        raise InvalidRequest("pixKey is required for PIX payouts.", param="pixKey")
    if not new.pix_key_type:
        raise InvalidRequest("pixKeyType is required for PIX payouts.", param="pixKeyType")
    checked = keys.validate(
        new.pix_key,
        new.pix_key_type,
        strict_cnpj=new.strict_cnpj,
        cnpj_checksum_waiver=account.cnpj_checksum_waiver,
    )
    if not checked.valid:
        raise InvalidRequest(
            "Invalid Pix key: " + "; ".join(checked.errors), code="invalid_pix_key", param="pixKey"
        )
    return {"pix_key": checked.normalised, "pix_key_type": str(checked.type)}


def _bank_account(account: dict | None) -> dict:
    if not account:
        raise InvalidRequest("bankAccount is required for TED payouts.", param="bankAccount")
    rules = {
        "bankCode": (BANK_CODE, "the bank's 3-digit COMPE code"),
        "agency": (AGENCY, "the branch number (up to 5 digits, optional check digit)"),
        "account": (BANK_ACCOUNT_NUMBER, "the account number with its check digit"),
    }
    for name, (pattern, what) in rules.items():
        if not pattern.fullmatch(str(account.get(name) or "")):
            raise InvalidRequest(f"bankAccount.{name} must be {what}.", param=f"bankAccount.{name}")
    holder = (account.get("holderName") or "").strip()
    if not holder:
        raise InvalidRequest("bankAccount.holderName is required.", param="bankAccount.holderName")
    document = strip_formatting(account.get("holderDocument") or "")
    if tax_id_kind(document) is None:
        raise InvalidRequest(
            "bankAccount.holderDocument must be a valid CPF or CNPJ.",
            param="bankAccount.holderDocument",
        )
    return {
        "bankCode": account["bankCode"],
        "agency": account["agency"],
        "account": account["account"],
        "holderName": holder,
        "holderDocument": document,
    }


def _crypto_destination(new: NewPayout) -> dict:
    if new.crypto_network != CRYPTO_NETWORK:
        raise InvalidRequest("Crypto payouts go over BSC only.", param="cryptoNetwork")
    if new.crypto_currency != CRYPTO_CURRENCY:
        raise InvalidRequest("Crypto payouts are in USDT only.", param="cryptoCurrency")
    if new.currency != CRYPTO_CURRENCY:
        raise InvalidRequest("Crypto payouts are in USDT.", param="currency")
    if not BEP20_ADDRESS.fullmatch(new.crypto_address or ""):
        raise InvalidRequest(
            "cryptoAddress must be a BEP-20 address: 0x and 40 hexadecimal characters.",
            param="cryptoAddress",
        )
    return {
        "crypto_address": new.crypto_address,
        "crypto_network": CRYPTO_NETWORK,
        "crypto_currency": CRYPTO_CURRENCY,
    }


def _destination_of(withdrawal: Withdrawal) -> dict:
    if withdrawal.type is WithdrawalType.PIX:
        return {"pixKey": withdrawal.pix_key, "pixKeyType": withdrawal.pix_key_type}
    if withdrawal.type is WithdrawalType.TED:
        return dict(withdrawal.bank_account or {})
    return {"cryptoAddress": withdrawal.crypto_address, "cryptoNetwork": CRYPTO_NETWORK}


def _audit(withdrawal: Withdrawal, actor_user_id: str | None, action: str) -> None:
    audit.record(
        account_id=withdrawal.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="withdrawal",
        subject_id=withdrawal.id,
        details={"amount": withdrawal.amount, "fee": withdrawal.fee},
    )
