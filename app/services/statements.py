"""Wallet statements: every posting that moved a wallet, newest first, with the available
balance after each one (the dashboard's statement page and its CSV export).

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

from app.extensions import db
from app.models import KeyMode, LedgerAccount, LedgerEntry, LedgerPosting, Wallet, WalletType

DEFAULT_PER_PAGE = 50
EXPORT_CHUNK = 500


@dataclass(frozen=True)
class StatementRow:
    """One posting as the merchant's wallet saw it; amounts in minor units."""

    created_at: datetime
    kind: str
    description: str
    available_change: int
    pending_change: int
    available_balance: int


@dataclass(frozen=True)
class StatementPage:
    rows: list[StatementRow]
    page: int
    per_page: int
    has_next: bool


def statement(
    account_id: str,
    mode: KeyMode,
    currency: str,
    page: int = 1,
    per_page: int = DEFAULT_PER_PAGE,
) -> StatementPage:
    """One page of the wallet's statement, newest posting first."""
    wallet_id = _wallet_id(account_id, mode, currency)
    if wallet_id is None:
        return StatementPage(rows=[], page=page, per_page=per_page, has_next=False)
    last_entry = sa.func.max(LedgerEntry.id).label("last_entry")
    found = db.session.execute(
        sa.select(
            LedgerPosting.created_at,
            LedgerPosting.kind,
            LedgerPosting.description,
            last_entry,
            _change(LedgerAccount.AVAILABLE).label("available_change"),
            _change(LedgerAccount.PENDING).label("pending_change"),
        )
        .select_from(LedgerEntry)
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id)
        .group_by(
            LedgerPosting.id,
            LedgerPosting.created_at,
            LedgerPosting.kind,
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
            rows.append(_row(row, int(row.available_change), int(row.pending_change), balance))
            balance -= int(row.available_change)
    return StatementPage(rows=rows, page=page, per_page=per_page, has_next=len(found) > per_page)


def statement_rows(
    account_id: str, mode: KeyMode, currency: str, chunk_size: int = EXPORT_CHUNK
) -> Iterator[StatementRow]:
    """The whole statement, newest first, for an export: the entries are read `chunk_size`
    at a time (`yield_per`), so a long history never sits in memory."""
    wallet_id = _wallet_id(account_id, mode, currency)
    if wallet_id is None:
        return
    newest = db.session.scalar(
        sa.select(sa.func.max(LedgerEntry.id)).where(LedgerEntry.wallet_id == wallet_id)
    )
    if newest is None:
        return
    balance = _available_after(wallet_id, newest)
    entries = db.session.execute(
        sa.select(
            LedgerEntry.posting_id,
            LedgerEntry.ledger_account,
            LedgerEntry.amount,
            LedgerPosting.created_at,
            LedgerPosting.kind,
            LedgerPosting.description,
        )
        .join(LedgerPosting, LedgerPosting.id == LedgerEntry.posting_id)
        .where(LedgerEntry.wallet_id == wallet_id, LedgerEntry.id <= newest)
        .order_by(LedgerEntry.id.desc())
        .execution_options(yield_per=chunk_size)
    )
    for _, group in itertools.groupby(entries, key=lambda entry: entry.posting_id):
        posting = list(group)
        available = _sum(posting, LedgerAccount.AVAILABLE)
        yield _row(posting[0], available, _sum(posting, LedgerAccount.PENDING), balance)
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


def _row(posting: sa.Row, available: int, pending: int, balance: int) -> StatementRow:
    return StatementRow(
        created_at=posting.created_at,
        kind=posting.kind,
        description=posting.description,
        available_change=available,
        pending_change=pending,
        available_balance=balance,
    )
