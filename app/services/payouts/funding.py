"""How much a payout may take from the wallet: the contract's caps on BRL payouts (per payout
and per day), and the available balance covering amount + fee.

A request pre-checks the balance; the approval checks it again under the wallet's row lock
just before the debit, so two approvals can never both spend the same money.
"""

from datetime import datetime, time

import sqlalchemy as sa
from flask import current_app

from app.business_days import SAO_PAULO
from app.errors import ApiError, InvalidRequest
from app.extensions import db
from app.formats.money import Amount
from app.marks import translatable
from app.models import Account, KeyMode, Payout, PayoutStatus
from app.models.base import utcnow
from app.services import ledger, wallets

W = PayoutStatus
BRL = "BRL"
INSUFFICIENT_FUNDS = "insufficient_funds"


def check_covered(
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
            translatable(
                "The available balance (%(available)s) does not cover the amount plus fee "
                "(%(total)s)."
            ),
            values={"available": Amount(available, currency), "total": Amount(total, currency)},
            code=INSUFFICIENT_FUNDS,
            param="amount" if refusal is InvalidRequest else None,
        )


def check_caps(account: Account, mode: KeyMode, amount: int) -> None:
    """A BRL payout within the account's per-payout cap, and today's payouts (São Paulo's
    day, whatever is not rejected, cancelled or failed) within its daily cap. The caller
    holds the account's row lock, so concurrent requests cannot together pass the daily cap."""
    cap = account.payout_transaction_cap
    if cap is None:
        cap = current_app.config["PAYOUT_TRANSACTION_CAP"]
    if amount > cap:
        raise InvalidRequest(
            translatable("A payout may be at most %(cap)s under this account's contract."),
            values={"cap": Amount(cap, BRL)},
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
            translatable("Payouts today would exceed the daily limit of %(cap)s."),
            values={"cap": Amount(daily_cap, BRL)},
            code="payout_daily_limit_exceeded",
            param="amount",
        )
