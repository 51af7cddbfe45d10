"""Daily payment totals kept by the same transactions that change a payment (issue 22), so
the stats and metrics never scan a window's transactions.

The rule of which row a transaction counts in is `_row_of`, and only there: the flush hook,
the rebuild and the readers all go through it or through its columns. Every flush that
inserts, changes or deletes a `Transaction` appends the difference to
`payment_total_changes` in the same database transaction (a savepoint or transaction that
rolls back takes its changes with it); new transactions written without a flush
(`services.new_rows`) append theirs, from `changes_of_new`, in the statement that writes
them. `fold_changes`, a periodic job, moves them into
`payment_day_totals` and its coarser projections (`PROJECTIONS`, what the stats read);
`DayTotals` reads the folded rows and the pending changes. Nothing here updates a shared row
on a payment's path, so concurrent payments of one merchant never wait on each other.

Writes that bypass the ORM (raw SQL, as the benchmarks' seeding does) are not seen:
`rebuild_totals` recounts from the transactions themselves.
"""

from collections import Counter, namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import cache

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.business_days import SAO_PAULO
from app.extensions import db, insert_for
from app.models import KeyMode, Transaction, pooled
from app.models.payment_totals import (
    PaymentDayPaidVolume,
    PaymentDayTotal,
    PaymentDayVolume,
    PaymentMonthVolume,
    PaymentTotalChange,
)

# The transaction's attributes its row depends on (each with `active_history` on the model,
# so a change made to an unloaded attribute still knows the value it replaces).
COUNTED_ATTRIBUTES = (
    "account_id",
    "mode",
    "created_at",
    "currency",
    "status",
    "paid_with",
    "payment_methods",
    "finalised_at",
    "paid_at",
    "amount",
)
FOLD_BATCH = 10_000
REBUILD_BATCH = 10_000


@dataclass(frozen=True)
class TotalRow:
    """Which daily total a transaction counts in."""

    account_id: str
    mode: KeyMode
    day: date  # São Paulo calendar day of its creation
    currency: str
    status: str
    paid_with: str  # "" when not paid with a method
    offered: str  # the methods it offers, sorted and comma-separated
    finalised: bool
    paid: bool


KEY_COLUMNS = tuple(TotalRow.__dataclass_fields__)


@dataclass(frozen=True)
class Projection:
    """A coarser table of the daily totals: its key columns (`month`: the first day of the
    day's month), and whether it holds the paid transactions only."""

    model: type
    key: tuple[str, ...]
    paid_only: bool = False

    def rows(self, totals: list[dict]) -> list[dict]:
        """`totals` (rows of `payment_day_totals`) summed into this table's rows."""
        summed: dict[tuple, list[int]] = {}
        for total in totals:
            if self.paid_only and not total["paid"]:
                continue
            key = tuple(
                total["day"].replace(day=1) if name == "month" else total[name] for name in self.key
            )
            figures = summed.setdefault(key, [0, 0])
            figures[0] += total["count"]
            figures[1] += total["amount"]
        return [
            {**dict(zip(self.key, key, strict=True)), "count": count, "amount": amount}
            for key, (count, amount) in summed.items()
            if count or amount
        ]


DAY_VOLUMES = Projection(
    PaymentDayVolume, ("account_id", "mode", "day", "currency", "paid_with", "paid")
)
MONTH_VOLUMES = Projection(
    PaymentMonthVolume, ("account_id", "mode", "month", "currency", "paid_with", "paid")
)
PAID_DAY_VOLUMES = Projection(
    PaymentDayPaidVolume, ("account_id", "mode", "day", "currency"), paid_only=True
)
PROJECTIONS = (DAY_VOLUMES, MONTH_VOLUMES, PAID_DAY_VOLUMES)


def offered_methods(methods: Iterable[str]) -> str:
    """The `offered` column of a transaction offering `methods`."""
    return ",".join(sorted(set(methods)))


def _row_of(values: dict) -> tuple[TotalRow, int]:
    """The row a transaction with these attribute values counts in, and its amount."""
    row = TotalRow(
        account_id=values["account_id"],
        mode=KeyMode(values["mode"]),
        day=values["created_at"].astimezone(SAO_PAULO).date(),
        currency=values["currency"],
        status=str(values["status"]),
        paid_with=values["paid_with"] or "",
        offered=offered_methods(values["payment_methods"] or ()),
        finalised=values["finalised_at"] is not None,
        paid=values["paid_at"] is not None,
    )
    return row, values["amount"]


def _current_values(transaction: Transaction) -> dict:
    return {name: getattr(transaction, name) for name in COUNTED_ATTRIBUTES}


def _previous_values(transaction: Transaction) -> dict | None:
    """The values the database held before this flush; None when none changed."""
    state = sa.inspect(transaction)
    values, changed = {}, False
    for name in COUNTED_ATTRIBUTES:
        history = state.attrs[name].history
        if history.deleted or history.added:
            changed = True
            values[name] = history.deleted[0] if history.deleted else None
        else:
            values[name] = history.unchanged[0] if history.unchanged else getattr(transaction, name)
    return values if changed else None


class _Tally:
    """Counts and amounts summed per row."""

    def __init__(self) -> None:
        self.counts: Counter[TotalRow] = Counter()
        self.amounts: Counter[TotalRow] = Counter()

    def add(self, row: TotalRow, count: int, amount: int) -> None:
        self.counts[row] += count
        self.amounts[row] += amount

    def add_transaction(self, values: dict, sign: int) -> None:
        row, amount = _row_of(values)
        self.add(row, sign, sign * amount)

    def rows(self) -> list[dict]:
        """The non-zero sums, as column values for an INSERT."""
        return [
            {**_key_values(row), "count": self.counts[row], "amount": self.amounts[row]}
            for row in self.counts
            if self.counts[row] or self.amounts[row]
        ]


def changes_of_new(transactions: Iterable[Transaction]) -> list[dict]:
    """The changes inserting these transactions appends, for a write that is no flush
    (`services.new_rows`)."""
    return _tally(transactions).rows()


def _record_changes(session: Session, _flush_context) -> None:
    """after_flush: the flush's inserts, changes and deletions of transactions, netted per
    row and appended to `payment_total_changes` on the flush's own connection."""
    changes = _tally(session.new, session.dirty, session.deleted).rows()
    if changes:
        session.connection().execute(_APPEND_CHANGES, changes)


def _tally(new: Iterable, changed: Iterable = (), deleted: Iterable = ()) -> _Tally:
    """The rows that inserting `new`, changing `changed` and deleting `deleted` move, netted;
    anything that is not a `Transaction` is passed over."""
    tally = _Tally()
    for transaction in new:
        if isinstance(transaction, Transaction):
            tally.add_transaction(_current_values(transaction), +1)
    for transaction in changed:
        if isinstance(transaction, Transaction):
            previous = _previous_values(transaction)
            if previous is not None:
                tally.add_transaction(previous, -1)
                tally.add_transaction(_current_values(transaction), +1)
    for transaction in deleted:
        if isinstance(transaction, Transaction):
            tally.add_transaction(_previous_values(transaction) or _current_values(transaction), -1)
    return tally


sa.event.listen(Session, "after_flush", _record_changes)

# A table INSERT built once, rather than the ORM's bulk insert built per flush: 0.13 ms of
# CPU for a row against 0.16 ms, measured in process on PostgreSQL.
_APPEND_CHANGES = sa.insert(PaymentTotalChange.__table__)


def _key_values(row: TotalRow) -> dict:
    return {name: getattr(row, name) for name in KEY_COLUMNS}


class DayTotals:
    """The count and amount of one account's transactions (one mode) created through `until`,
    read from the folded totals (the coarse ones when they hold every column asked for) plus
    the changes not yet folded, which give whole days through `until`'s. The few rows of that
    day created after `until` (none, when `until` is now) are read once per reader, before
    its first read of the totals (so each one taken off was counted there: a read is a
    snapshot of its own), and taken off every answer, so a window ends at `until`."""

    def __init__(self, account_id: str, mode: KeyMode, until: datetime) -> None:
        self.account_id = account_id
        self.mode = mode
        self.until = until
        self.last_day = until.astimezone(SAO_PAULO).date()
        self._later: list[tuple[TotalRow, int]] | None = None

    def grouped(self, first_day: date, by: tuple[str, ...]) -> list[tuple]:
        """Counts and amounts from 00:00 São Paulo of `first_day`, grouped by the named key
        columns, as named tuples of those columns, `count` and `amount`."""
        later = self._created_later()  # first: what is taken off was added
        # On the pool unless the session has a transaction open: these are plain rows, and
        # the session's row handling was most of the Python time of a year's daily points.
        rows = pooled.all_rows(_grouped_read(by), self._scope(first_day))
        total = _day_total(by)
        if not later:
            return [total._make(row) for row in rows]
        sums: dict[tuple, list[int]] = {tuple(row[:-2]): [row[-2], row[-1]] for row in rows}
        for row, amount in later:
            figures = sums[tuple(getattr(row, name) for name in by)]
            figures[0] -= 1
            figures[1] -= amount
        return [total(*key, *figures) for key, figures in sums.items()]

    def paid_per_day(self, first_day: date) -> dict[date, dict[str, int]]:
        """The paid amount per São Paulo day from `first_day`, and per currency, for the days
        and currencies with any paid transaction. Read from the paid volumes as they are
        folded (a row per day and currency) with the pending changes, and added up here:
        grouping them in SQL and naming each row cost as much as the read for a year."""
        later = [(row, amount) for row, amount in self._created_later() if row.paid]
        figures: dict[date, dict[str, list[int]]] = {}
        for day, currency, count, amount in pooled.all_rows(_PAID_PER_DAY, self._scope(first_day)):
            _add_figures(figures, day, currency, count, amount)
        for row, amount in later:
            _add_figures(figures, row.day, row.currency, -1, -amount)
        amounts = {}
        for day, currencies in figures.items():
            paid = {currency: amount for currency, (count, amount) in currencies.items() if count}
            if paid:
                amounts[day] = paid
        return amounts

    def _scope(self, first_day: date) -> dict[str, object]:
        """The values of a read's parameters: the account, the mode, and the days from
        `first_day` through `until`'s as days before, in and after its whole months."""
        months_from = _first_whole_month(first_day)
        return {
            "account_id": self.account_id,
            "mode": self.mode,
            "first_day": first_day,
            "last_day": self.last_day,
            "months_from": months_from,
            "months_until": max(months_from, self.last_day.replace(day=1)),
        }

    def _created_later(self) -> list[tuple[TotalRow, int]]:
        if self._later is None:
            next_midnight = datetime.combine(
                self.last_day + timedelta(days=1), time.min, tzinfo=SAO_PAULO
            )
            later = pooled.all_rows(
                _CREATED_LATER,
                {
                    "account_id": self.account_id,
                    "mode": self.mode,
                    "until": self.until,
                    "next_midnight": next_midnight,
                },
            )
            self._later = [
                _row_of(dict(zip(COUNTED_ATTRIBUTES, row, strict=True))) for row in later
            ]
        return self._later


_CREATED_LATER = sa.select(*(getattr(Transaction, name) for name in COUNTED_ATTRIBUTES)).where(
    Transaction.account_id == sa.bindparam("account_id"),
    Transaction.mode == sa.bindparam("mode"),
    Transaction.created_at > sa.bindparam("until"),
    Transaction.created_at < sa.bindparam("next_midnight"),
)


def _first_whole_month(day: date) -> date:
    """The first day of the first calendar month that starts on or after `day`."""
    if day.day == 1:
        return day
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


@cache
def _grouped_read(by: tuple[str, ...]) -> sa.Select:
    """The folded rows and the pending changes of one account and mode between two days,
    summed per `by`; built once per shape, since building it cost as much as a week's
    read."""
    both = sa.union_all(*_folded_parts(by), _in_days(PaymentTotalChange, by))
    both = both.subquery()
    columns = [both.c[name] for name in by]
    return sa.select(
        *columns,
        sa.cast(sa.func.sum(both.c.count), sa.BigInteger),
        sa.cast(sa.func.sum(both.c.amount), sa.BigInteger),
    ).group_by(*columns)


def _folded_parts(by: tuple[str, ...]) -> list[sa.Select]:
    """The folded rows a read of `by` needs, from the coarsest table that holds them: the
    volumes (a window's whole months from the monthly ones, the days before and after them
    from the daily ones), or else the full daily totals. Each part reads one range of its
    table's key, which a generic plan of the prepared statement keeps to as well."""
    if not set(by) <= set(DAY_VOLUMES.key):
        return [_in_days(PaymentDayTotal, by)]
    if "day" in by:
        return [_in_days(PaymentDayVolume, by)]
    days = PaymentDayVolume.day
    months = PaymentMonthVolume.month
    return [
        _in_days(PaymentDayVolume, by).where(days < sa.bindparam("months_from")),
        _scoped(PaymentMonthVolume, by).where(
            months >= sa.bindparam("months_from"), months < sa.bindparam("months_until")
        ),
        _scoped(PaymentDayVolume, by).where(
            days >= sa.bindparam("months_until"), days <= sa.bindparam("last_day")
        ),
    ]


def _in_days(model: type, by: tuple[str, ...]) -> sa.Select:
    return _scoped(model, by).where(
        model.day >= sa.bindparam("first_day"), model.day <= sa.bindparam("last_day")
    )


def _scoped(model: type, by: tuple[str, ...]) -> sa.Select:
    return sa.select(*(getattr(model, name) for name in by), model.count, model.amount).where(
        model.account_id == sa.bindparam("account_id"), model.mode == sa.bindparam("mode")
    )


def _add_figures(
    figures: dict[date, dict[str, list[int]]], day: date, currency: str, count: int, amount: int
) -> None:
    """Add a count and an amount to a day's currency."""
    known = figures.setdefault(day, {}).setdefault(currency, [0, 0])
    known[0] += count
    known[1] += amount


_PAID_PER_DAY = sa.union_all(
    _in_days(PaymentDayPaidVolume, ("day", "currency")),
    _in_days(PaymentTotalChange, ("day", "currency")).where(PaymentTotalChange.paid),
)


@cache
def _day_total(by: tuple[str, ...]) -> type:
    """The named tuple `DayTotals.grouped` answers with for these key columns."""
    return namedtuple("DayTotal", (*by, "count", "amount"))


def fold_changes() -> int:
    """Move the oldest FOLD_BATCH changes into the daily totals, in one database transaction;
    returns how many were folded (call again while it returns FOLD_BATCH)."""
    _serialise_with_other_folds(db.session)
    oldest = sa.select(PaymentTotalChange.id).order_by(PaymentTotalChange.id).limit(FOLD_BATCH)
    moved = db.session.execute(
        sa.delete(PaymentTotalChange)
        .where(PaymentTotalChange.id.in_(oldest.scalar_subquery()))
        .returning(
            *(getattr(PaymentTotalChange, name) for name in KEY_COLUMNS),
            PaymentTotalChange.count,
            PaymentTotalChange.amount,
        )
    ).all()
    tally = _Tally()
    for change in moved:
        tally.add(TotalRow(*change[: len(KEY_COLUMNS)]), change.count, change.amount)
    totals = tally.rows()
    _add_to(PaymentDayTotal, KEY_COLUMNS, totals)
    for projection in PROJECTIONS:
        _add_to(projection.model, projection.key, projection.rows(totals))
    db.session.commit()
    return len(moved)


def rebuild_totals(account_id: str | None = None) -> int:
    """Recount the daily totals of one account (or all) from its transactions, dropping what
    was folded or pending for it; returns how many transactions were counted. For writes
    that bypassed the ORM. It runs in a database transaction of its own, which on PostgreSQL
    reads one snapshot (REPEATABLE READ): a payment committed meanwhile keeps its pending
    change and is folded later, never counted twice."""
    engine = db.engine
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(isolation_level="REPEATABLE READ")
    with Session(engine) as session, session.begin():
        _serialise_with_other_folds(session)
        for model in (PaymentDayTotal, *(p.model for p in PROJECTIONS), PaymentTotalChange):
            delete = sa.delete(model)
            if account_id is not None:
                delete = delete.where(model.account_id == account_id)
            session.execute(delete)

        query = sa.select(*(getattr(Transaction, name) for name in COUNTED_ATTRIBUTES))
        if account_id is not None:
            query = query.where(Transaction.account_id == account_id)
        tally = _Tally()
        counted = 0
        for values in session.execute(query.execution_options(yield_per=REBUILD_BATCH)).mappings():
            tally.add_transaction(values, +1)
            counted += 1
        totals = tally.rows()
        tables = [(PaymentDayTotal, totals), *((p.model, p.rows(totals)) for p in PROJECTIONS)]
        for model, rows in tables:
            for start in range(0, len(rows), REBUILD_BATCH):
                session.execute(sa.insert(model), rows[start : start + REBUILD_BATCH])
    return counted


def _add_to(model: type, key: tuple[str, ...], rows: list[dict]) -> None:
    """Add counts and amounts to their rows of `model`, creating the rows that do not exist."""
    if not rows:
        return
    insert = insert_for(model)
    db.session.execute(
        insert.on_conflict_do_update(
            index_elements=list(key),
            set_={
                "count": model.count + insert.excluded.count,
                "amount": model.amount + insert.excluded.amount,
            },
        ),
        rows,
    )


def _serialise_with_other_folds(session: Session) -> None:
    """One fold or rebuild at a time (PostgreSQL; SQLite has one writer anyway)."""
    if db.engine.dialect.name == "postgresql":
        session.execute(
            sa.text("SELECT pg_advisory_xact_lock(hashtextextended('payment_totals', 0))")
        )
