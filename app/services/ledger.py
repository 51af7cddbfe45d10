"""Money movement: every balance change is a posting of entries that sum to zero.

`post` is the only writer of wallet balances. It locks the wallet row, appends the entries
and updates the cached balances in the caller's database transaction, so a wallet always
equals the sum of its entries; `check` proves it (`flask ledger check`).
"""

from collections import Counter
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from app.errors import ApiError
from app.extensions import db
from app.models import (
    KeyMode,
    LedgerAccount,
    LedgerEntry,
    LedgerPosting,
    Wallet,
    WalletType,
)
from app.models.ledger import WALLET_BALANCES


class UnbalancedPosting(ApiError):
    """A bug, never a client error: a posting whose lines do not sum to zero."""


@dataclass(frozen=True)
class Line:
    account: LedgerAccount
    amount: int


def locked_wallet(account_id: str, mode: KeyMode, currency: str) -> Wallet:
    """The operational wallet, created on first use, locked until commit."""
    query = (
        sa.select(Wallet)
        .where(
            Wallet.account_id == account_id,
            Wallet.mode == mode,
            Wallet.currency == currency,
            Wallet.wallet_type == WalletType.OPERATIONAL,
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    wallet = db.session.scalar(query)
    if wallet is None:
        try:
            with db.session.begin_nested():
                db.session.add(
                    Wallet(
                        account_id=account_id,
                        mode=mode,
                        currency=currency,
                        available=0,
                        pending=0,
                        retained=0,
                    )
                )
        except IntegrityError:
            pass  # created by a concurrent request: read theirs below
        wallet = db.session.scalar(query)
    return wallet


def post(
    *,
    account_id: str,
    mode: KeyMode,
    currency: str,
    kind: str,
    reference_id: str,
    description: str,
    lines: list[Line],
) -> LedgerPosting:
    """Book one movement; (kind, reference_id) is unique, so it can never be booked twice."""
    if sum(line.amount for line in lines) != 0:
        raise UnbalancedPosting(f"Posting {kind} {reference_id} does not sum to zero.")
    wallet = None
    if any(line.account in WALLET_BALANCES for line in lines):
        wallet = locked_wallet(account_id, mode, currency)
    posting = LedgerPosting(
        account_id=account_id,
        mode=mode,
        currency=currency,
        kind=kind,
        reference_id=reference_id,
        description=description,
    )
    db.session.add(posting)
    db.session.flush()
    for line in lines:
        in_wallet = line.account in WALLET_BALANCES
        db.session.add(
            LedgerEntry(
                posting_id=posting.id,
                wallet_id=wallet.id if in_wallet else None,
                ledger_account=line.account,
                amount=line.amount,
            )
        )
        if in_wallet:
            balance = str(line.account)
            setattr(wallet, balance, getattr(wallet, balance) + line.amount)
    db.session.flush()
    return posting


def check() -> list[str]:
    """Every difference between the wallets and the entries, and every unbalanced posting."""
    problems = []
    sums = Counter()
    rows = db.session.execute(
        sa.select(
            LedgerEntry.wallet_id, LedgerEntry.ledger_account, sa.func.sum(LedgerEntry.amount)
        )
        .where(LedgerEntry.wallet_id.is_not(None))
        .group_by(LedgerEntry.wallet_id, LedgerEntry.ledger_account)
    )
    for wallet_id, account, total in rows:
        sums[(wallet_id, account)] = int(total)
    for wallet in db.session.scalars(sa.select(Wallet).order_by(Wallet.id)):
        for account in sorted(WALLET_BALANCES):
            cached = getattr(wallet, str(account))
            booked = sums[(wallet.id, account)]
            if cached != booked:
                problems.append(
                    f"wallet {wallet.id} ({wallet.mode} {wallet.currency}) {account}: "
                    f"balance {cached} but entries sum to {booked}"
                )
    unbalanced = db.session.execute(
        sa.select(LedgerEntry.posting_id, sa.func.sum(LedgerEntry.amount))
        .group_by(LedgerEntry.posting_id)
        .having(sa.func.sum(LedgerEntry.amount) != 0)
    )
    for posting_id, total in unbalanced:
        problems.append(f"posting {posting_id} sums to {int(total)}, not 0")
    return problems
