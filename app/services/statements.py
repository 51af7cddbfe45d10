"""Wallet statements: every posting that moved a wallet, newest first, with the available
balance after each one, its gross, fee and net, and, for a period, the opening and closing
balances (the dashboard's statement page and its CSV export).

`ledger.post` appends a wallet's entries while it holds the wallet's row lock, so for one
wallet the entry ids grow in commit order and the entries of two postings never interleave.
The entry id is therefore the statement's order, and the running balance can be anchored on
the wallet's cached balance: the balance after a posting is `available` minus the available
changes booked after it. Reading both in one statement means a posting committed meanwhile
counts on both sides or on neither, so every page is right on its own, on SQLite and
PostgreSQL alike, without summing the wallet's whole history.
"""

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import aliased

from app.extensions import db
from app.models import KeyMode, LedgerAccount, LedgerEntry, LedgerPosting, Wallet, WalletType

DEFAULT_PER_PAGE = 50
EXPORT_CHUNK = 500
FEE_ACCOUNTS = (LedgerAccount.PROVIDER_FEES, LedgerAccount.PLATFORM_FEES)


@dataclass(frozen=True)
class StatementRow:
    """One posting as the merchant's wallet saw it; amounts in minor units. `net` is what it
    changed in the wallet (available, pending and retained together), `fee` what it booked
    as fees (negative when fees were given back), `gross` the movement before fees."""

    created_at: datetime
    kind: str
    reference_id: str  # what the posting is about (a transaction, refund, case or payout)
    description: str  # the ledger's own English words, kept for the exports
    available_change: int
    pending_change: int
    available_balance: int
    net: int
    fee: int

    @property
    def gross(self) -> int:
        return self.net + self.fee


@dataclass(frozen=True)
class Period:
    """Postings created in [`start`, `stop`) (None: unbounded); the statement's window."""

    start: datetime | None = None
    stop: datetime | None = None


@dataclass(frozen=True)
class StatementPage:
    rows: list[StatementRow]
    page: int
    per_page: int
    has_next: bool
    opening_balance: int  # available before the period's first posting
    closing_balance: int  # available after its last


@dataclass(frozen=True)
class _Window:
    """The period as entry ids: the wallet's entries `first`..`last`, both included. Entry ids
    grow in commit order, so balances at its edges are exact and opening + changes = closing."""

    first: int
    last: int


def statement(
    account_id: str,
    mode: KeyMode,
    currency: str,
    page: int = 1,
    per_page: int = DEFAULT_PER_PAGE,
    period: Period = Period(),
) -> StatementPage:
    """One page of the wallet's statement for the period, newest posting first."""
    wallet_id = _wallet_id(account_id, mode, currency)
    window = _window(wallet_id, period) if wallet_id else None
    if window is None:
        balance = _balance_before(wallet_id, period.start) if wallet_id else 0
        return StatementPage([], page, per_page, False, balance, balance)
    last_entry = sa.func.max(LedgerEntry.id).label("last_entry")
    found = db.session.execute(
        sa.select(
            LedgerPosting.created_at,
            LedgerPosting.kind,
            LedgerPosting.reference_id,
            LedgerPosting.description,
            last_entry,
            _change(LedgerAccount.AVAILABLE).label("available_change"),
            _change(LedgerAccount.PENDING).label("pending_change"),
            sa.func.sum(LedgerEntry.amount).label("net"),
            _fee(LedgerPosting.id).label("fee"),
        )
        .select_from(LedgerEntry)
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id, _within(window))
        .group_by(
            LedgerPosting.id,
            LedgerPosting.created_at,
            LedgerPosting.kind,
            LedgerPosting.reference_id,
            LedgerPosting.description,
        )
        .order_by(last_entry.desc())
        .offset((page - 1) * per_page)
        .limit(per_page + 1)
    ).all()
    shown = found[:per_page]
    rows = []
    if shown:
        balance = _available_after(wallet_id, shown[0].last_entry)
        for row in shown:
            changes = int(row.available_change), int(row.pending_change), int(row.net)
            rows.append(_row(row, *changes, balance))
            balance -= int(row.available_change)
    return StatementPage(
        rows=rows,
        page=page,
        per_page=per_page,
        has_next=len(found) > per_page,
        opening_balance=_available_after(wallet_id, window.first - 1),
        closing_balance=_available_after(wallet_id, window.last),
    )


def statement_rows(
    account_id: str,
    mode: KeyMode,
    currency: str,
    chunk_size: int = EXPORT_CHUNK,
    period: Period = Period(),
) -> Iterator[StatementRow]:
    """The whole statement of the period, newest first, for an export: the entries are read
    `chunk_size` at a time (`yield_per`), so a long history never sits in memory."""
    wallet_id = _wallet_id(account_id, mode, currency)
    window = _window(wallet_id, period) if wallet_id else None
    if window is None:
        return
    balance = _available_after(wallet_id, window.last)
    entries = db.session.execute(
        sa.select(
            LedgerEntry.posting_id,
            LedgerEntry.ledger_account,
            LedgerEntry.amount,
            LedgerPosting.created_at,
            LedgerPosting.kind,
            LedgerPosting.reference_id,
            LedgerPosting.description,
            _fee(LedgerEntry.posting_id).label("fee"),
        )
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id, _within(window))
        .order_by(LedgerEntry.id.desc())
        .execution_options(yield_per=chunk_size)
    )
    for _, group in itertools.groupby(entries, key=lambda entry: entry.posting_id):
        posting = list(group)
        available = _sum(posting, LedgerAccount.AVAILABLE)
        pending, net = _sum(posting, LedgerAccount.PENDING), sum(e.amount for e in posting)
        yield _row(posting[0], available, pending, net, balance)
        balance -= available


def _wallet_id(account_id: str, mode: KeyMode, currency: str) -> str | None:
    return db.session.scalar(
        sa.select(Wallet.id).where(
            Wallet.account_id == account_id,
            Wallet.mode == mode,
            Wallet.currency == currency,
            Wallet.wallet_type == WalletType.OPERATIONAL,
        )
    )


def _window(wallet_id: str, period: Period) -> _Window | None:
    """The period's first and last entry of the wallet, or None when it has none."""
    created = LedgerPosting.created_at
    of_wallet = (
        sa.select(LedgerEntry.id)
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id)
    )
    if period.start is not None:
        of_wallet = of_wallet.where(created >= period.start)
    if period.stop is not None:
        of_wallet = of_wallet.where(created < period.stop)
    bounds = of_wallet.subquery()
    first, last = db.session.execute(
        sa.select(sa.func.min(bounds.c.id), sa.func.max(bounds.c.id))
    ).one()
    return None if first is None else _Window(first=first, last=last)


def _within(window: _Window) -> sa.ColumnElement[bool]:
    return LedgerEntry.id.between(window.first, window.last)


def _balance_before(wallet_id: str, start: datetime | None) -> int:
    """The available balance when a period with no postings began (0 for no start)."""
    if start is None:
        return 0
    before = db.session.scalar(
        sa.select(sa.func.max(LedgerEntry.id))
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id, LedgerPosting.created_at < start)
    )
    return 0 if before is None else _available_after(wallet_id, before)


def _fee(posting_id: sa.ColumnElement[str]) -> sa.ScalarSelect[int]:
    """The fees a posting booked (its fee lines, which no wallet holds, summed)."""
    fee_line = aliased(LedgerEntry)
    return (
        sa.select(sa.func.coalesce(sa.func.sum(fee_line.amount), 0))
        .where(fee_line.posting_id == posting_id, fee_line.ledger_account.in_(FEE_ACCOUNTS))
        .scalar_subquery()
    )


def _available_after(wallet_id: str, entry_id: int) -> int:
    """The available balance once the entries up to `entry_id` were booked: the cached
    balance minus what came later, in one statement (one snapshot)."""
    later = (
        sa.select(sa.func.coalesce(sa.func.sum(LedgerEntry.amount), 0))
        .where(
            LedgerEntry.wallet_id == wallet_id,
            LedgerEntry.ledger_account == LedgerAccount.AVAILABLE,
            LedgerEntry.id > entry_id,
        )
        .scalar_subquery()
    )
    return int(db.session.scalar(sa.select(Wallet.available - later).where(Wallet.id == wallet_id)))


def _change(account: LedgerAccount) -> sa.ColumnElement[int]:
    """A posting's net change to one balance of the wallet (its entries summed)."""
    return sa.func.sum(
        sa.case((LedgerEntry.ledger_account == account, LedgerEntry.amount), else_=0)
    )


def _sum(entries: Sequence[sa.Row], account: LedgerAccount) -> int:
    return sum(entry.amount for entry in entries if entry.ledger_account == account)


def _row(posting: sa.Row, available: int, pending: int, net: int, balance: int) -> StatementRow:
    return StatementRow(
        created_at=posting.created_at,
        kind=posting.kind,
        reference_id=posting.reference_id,
        description=posting.description,
        available_change=available,
        pending_change=pending,
        available_balance=balance,
        net=net,
        fee=int(posting.fee),
    )
