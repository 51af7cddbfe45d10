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
    Payout,
    PayoutStatus,
    PayoutType,
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

W = PayoutStatus
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

TRANSITIONS: dict[PayoutStatus, frozenset[PayoutStatus]] = {
    W.PENDING: frozenset({W.APPROVED, W.REJECTED, W.CANCELLED}),
    W.APPROVED: frozenset({W.PROCESSING}),
    W.PROCESSING: frozenset({W.COMPLETED, W.FAILED}),
}
PAYOUT_MACHINE = StateMachine("withdrawal", TRANSITIONS)
EVENTS_ON_ENTRY: dict[PayoutStatus, tuple[str, ...]] = {
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
LISTING_ORDER = (Payout.created_at.desc(), Payout.id.desc())  # newest first
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


def request_payout(membership: Membership, new: NewPayout) -> Payout:
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
    payout = Payout(
        account_id=account.id,
        mode=mode,
        status=W.PENDING,
        type=PayoutType(new.type),
        amount=new.amount,
        fee=fee,
        currency=new.currency,
        description=new.description,
        requested_by_user_id=membership.user_id,
        provider=provider.name,
        **destination,
    )
    db.session.add(payout)
    db.session.flush()
    _record_events(payout, None)
    if _auto_approves(account, payout):
        _approve(payout, actor_user_id=None, refusal=InvalidRequest)
    return payout


def approve(payout_id: str, actor_user_id: str) -> Payout:
    """Staff approval: debits amount + fee now, or refuses (409) if the balance no longer
    covers them; processing starts after the commit."""
    payout = _lock(payout_id)
    _refuse_own_account(payout, actor_user_id)
    _approve(payout, actor_user_id)
    return payout


def reject(payout_id: str, actor_user_id: str, reason: str | None) -> Payout:
    """Staff refusal of a PENDING payout; nothing was debited, nothing moves."""
    payout = _lock(payout_id)
    _refuse_own_account(payout, actor_user_id)
    _require_pending(payout, "rejected")
    payout.decided_by_user_id = actor_user_id
    payout.failure_reason = reason or "Rejected by the platform's review."
    _transition(payout, W.REJECTED)
    _audit(payout, actor_user_id, "payout.rejected")
    return payout


def cancel(membership: Membership, payout_id: str) -> Payout:
    """The merchant withdraws a request, only while PENDING (nothing was debited)."""
    payout = _lock(payout_id)
    if payout.account_id != membership.account_id:
        raise NotFound("No such withdrawal.")
    cancellability(payout, membership).require()
    _transition(payout, W.CANCELLED)
    _audit(payout, membership.user_id, "payout.cancelled")
    return payout


def cancellability(payout: Payout, membership: Membership) -> Allowance:
    """May this member withdraw the request? An OWNER or ADMIN, while it is PENDING: once
    approved, its money is debited and on its way."""
    role = manager_allowance(
        membership, "Only the account's OWNER or ADMIN may cancel payouts.", ROLE_REQUIRED
    )
    if payout.status is W.PENDING:
        return role
    not_pending = Conflict(
        f"Only a PENDING withdrawal can be cancelled; this one is {payout.status}.",
        code="withdrawal_not_cancellable",
    )
    return role & refused(not_pending)


def start_processing(payout_id: str, now: datetime | None = None) -> Payout | None:
    """Claim a payout to send: APPROVED → PROCESSING, or a PROCESSING one whose sender has
    been silent for STUCK_AFTER (its worker died; the provider call is idempotent). None when
    someone else is sending it or there is nothing to send."""
    now = now or utcnow()
    payout = _lock(payout_id)
    if payout.status is W.APPROVED:
        _transition(payout, W.PROCESSING)
        return payout
    if payout.status is W.PROCESSING and payout.updated_at <= now - STUCK_AFTER:
        payout.updated_at = now
        return payout
    return None


def send(payout: Payout) -> None:
    """Ask the provider to pay out (idempotent by our id), then settle the outcome. Only a
    definitive rejection refunds; an unknown outcome (ProviderError) propagates and the
    payout stays PROCESSING until the sweep retries it."""
    provider = provider_named(payout.provider, payout.mode)
    request = PayoutRequest(
        reference=payout.id,
        payout_type=str(payout.type),
        amount=payout.amount,
        currency=payout.currency,
        destination=_destination_of(payout),
        requested_at=payout.created_at,
    )
    try:
        sent = provider.payout(request)
    except PayoutRejected as rejection:
        _fail(payout.id, rejection.message)
        return
    _complete(payout.id, sent.reference)


def due_for_processing(now: datetime | None = None, limit: int = 100) -> list[str]:
    """Payouts approved a while ago whose job never ran (Redis was down), and payouts stuck
    in PROCESSING (their worker died), to (re)send; fresh approvals are left to their job."""
    now = now or utcnow()
    return db.session.scalars(
        sa.select(Payout.id)
        .where(
            sa.or_(
                sa.and_(Payout.status == W.APPROVED, Payout.updated_at <= now - JOB_GRACE),
                sa.and_(Payout.status == W.PROCESSING, Payout.updated_at <= now - STUCK_AFTER),
            ),
        )
        .order_by(Payout.updated_at)
        .limit(limit)
    ).all()


def get(account_id: str, payout_id: str) -> Payout:
    return tenancy.owned(Payout, payout_id, "No such withdrawal.", account_id=account_id)


def list_payouts(
    account_id: str, mode: KeyMode | None, status: str | None, page: int, limit: int
) -> tuple[list[Payout], int]:
    """One page (newest first) and the total matching; `mode=None` lists both modes."""
    listing = sa.select(Payout).where(*_listing_conditions(account_id, mode, status))
    found = paged(listing.order_by(*LISTING_ORDER), page, limit)
    return found.rows, found.total


def payout_rows(
    account_id: str, mode: KeyMode | None, status: str | None, chunk_size: int
) -> Iterator[Payout]:
    """Every payout `list_payouts` pages through, in its order, for an export: one query read
    `chunk_size` rows at a time (`yield_per`), so a long history never sits in memory."""
    yield from db.session.scalars(
        sa.select(Payout)
        .where(*_listing_conditions(account_id, mode, status))
        .order_by(*LISTING_ORDER)
        .execution_options(yield_per=chunk_size)
    )


def pending_review(limit: int = 100) -> list[Payout]:
    """PENDING payouts of every account, oldest first: the back-office approval queue."""
    return list(
        db.session.scalars(
            sa.select(Payout)
            .where(Payout.status == W.PENDING)
            .order_by(Payout.created_at, Payout.id)
            .limit(limit)
        )
    )


def _listing_conditions(account_id: str, mode: KeyMode | None, status: str | None) -> list:
    conditions = [Payout.account_id == account_id]
    if mode is not None:
        conditions.append(Payout.mode == mode)
    if status is not None:
        conditions.append(Payout.status == PayoutStatus(status))
    return conditions


def _require_pending(payout: Payout, action: str) -> None:
    if payout.status is not W.PENDING:
        raise Conflict(
            f"Only a PENDING withdrawal can be {action}; this one is {payout.status}.",
            code="withdrawal_not_pending",
        )


def _refuse_own_account(payout: Payout, actor_user_id: str) -> None:
    """Four eyes: staff never decide a payout they asked for or of an account they belong to."""
    if payout.requested_by_user_id == actor_user_id or accounts.active_membership(
        actor_user_id, payout.account_id
    ):
        raise PermissionDenied(
            "Staff may not decide payouts of an account they belong to.",
            code="self_approval_forbidden",
        )


def _auto_approves(account: Account, payout: Payout) -> bool:
    """Flagged accounts skip approval for BRL payouts up to their threshold."""
    threshold = account.withdrawals_auto_approve_threshold
    if threshold is None:
        threshold = current_app.config["WITHDRAWALS_AUTO_APPROVE_THRESHOLD"]
    return (
        account.withdrawals_auto_approve and payout.currency == BRL and payout.amount <= threshold
    )


def _approve(payout: Payout, actor_user_id: str | None, refusal: type[ApiError] = Conflict) -> None:
    _require_pending(payout, "approved")
    total = payout.wallet_debit
    _check_covered(
        payout.account_id,
        payout.mode,
        payout.currency,
        total,
        locked=True,
        refusal=refusal,
    )
    ledger.post(
        account_id=payout.account_id,
        mode=payout.mode,
        currency=payout.currency,
        kind=DEBIT,
        reference_id=payout.id,
        description=f"Payout {payout.id}",
        lines=[
            Line(LedgerAccount.AVAILABLE, -total),
            Line(LedgerAccount.PAYOUT_CLEARING, payout.amount),
            Line(LedgerAccount.PLATFORM_FEES, payout.fee),
        ],
    )
    payout.decided_by_user_id = actor_user_id
    _transition(payout, W.APPROVED)
    _audit(payout, actor_user_id, "payout.approved")
    enqueue_after_commit(db.session(), MONEY_QUEUE, PROCESS_JOB, payout.id)


def _complete(payout_id: str, reference: str) -> None:
    payout = _book_outcome(
        payout_id,
        COMPLETION,
        f"settled ({reference})",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, w.amount),
        ],
    )
    if payout is not None:
        payout.provider_reference = reference
        payout.completed_at = utcnow()
        _transition(payout, W.COMPLETED)


def _fail(payout_id: str, reason: str) -> None:
    """The acquirer rejected it: amount + fee go back to `available` in one posting."""
    payout = _book_outcome(
        payout_id,
        REFUND,
        "rejected by the acquirer: refund",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PLATFORM_FEES, -w.fee),
            Line(LedgerAccount.AVAILABLE, w.wallet_debit),
        ],
    )
    if payout is not None:
        payout.failure_reason = reason
        _transition(payout, W.FAILED)


def _book_outcome(
    payout_id: str, kind: str, what: str, lines: Callable[[Payout], list[Line]]
) -> Payout | None:
    """Lock a PROCESSING payout and post its outcome; None if it is no longer processing."""
    payout = _lock(payout_id)
    if payout.status is not W.PROCESSING:
        return None
    ledger.post(
        account_id=payout.account_id,
        mode=payout.mode,
        currency=payout.currency,
        kind=kind,
        reference_id=payout.id,
        description=f"Payout {payout.id} {what}",
        lines=lines(payout),
    )
    return payout


def _transition(payout: Payout, to: PayoutStatus) -> None:
    previous = PAYOUT_MACHINE.move(payout, to)
    payout.updated_at = utcnow()
    _record_events(payout, previous)


def _record_events(payout: Payout, previous: PayoutStatus | None) -> None:
    at = payout.updated_at or utcnow()
    for event_type in EVENTS_ON_ENTRY.get(payout.status, ()):
        data = (
            {"object": payout_object(payout)}
            if event_type.startswith("payout.")
            else withdrawal_event_data(payout, previous, at)
        )
        record_event(
            payout.account_id,
            payout.mode,
            event_type,
            data,
            subject_type="withdrawal",
            subject_id=payout.id,
        )


def _lock(payout_id: str) -> Payout:
    payout = locking.lock(Payout, payout_id)
    if payout is None:
        raise NotFound("No such withdrawal.")
    return payout


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
        sa.select(sa.func.coalesce(sa.func.sum(Payout.amount), 0)).where(
            Payout.account_id == account.id,
            Payout.mode == mode,
            Payout.currency == BRL,
            Payout.created_at >= today,
            Payout.status.not_in((W.REJECTED, W.CANCELLED, W.FAILED)),
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


def _destination_of(payout: Payout) -> dict:
    if payout.type is PayoutType.PIX:
        return {"pixKey": payout.pix_key, "pixKeyType": payout.pix_key_type}
    if payout.type is PayoutType.TED:
        return dict(payout.bank_account or {})
    return {"cryptoAddress": payout.crypto_address, "cryptoNetwork": CRYPTO_NETWORK}


def _audit(payout: Payout, actor_user_id: str | None, action: str) -> None:
    audit.record(
        account_id=payout.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="withdrawal",
        subject_id=payout.id,
        details={"amount": payout.amount, "fee": payout.fee},
    )
