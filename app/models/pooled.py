"""Lone statements run straight on a pooled DBAPI connection in autocommit, for the hot
paths (issue 22): the idempotency claim (`unflushed_commit`), the account's velocity
count, the charge read by id (`detached_copy`), the stats' reads of the daily totals
(`all_rows`), and a charge's new rows written with the idempotent answer that guards them
(`write_if`, for `services.new_rows`).

Through the session, such a statement spent about two thirds of its interpreter time in
SQLAlchemy's session, connection and execution machinery, around a statement PostgreSQL
answers in microseconds. Here a statement, built once as a module constant or cached, is
compiled once per dialect with SQLAlchemy's own bind and result processors, then sent on a
connection taken from the engine's pool in autocommit (no BEGIN or COMMIT round trip): it
commits as it runs, so it is for statements that need no transaction. Like
`extensions.outside_transaction`, a transaction the session already has open is used as it
is by `first_row` and `all_rows`: the statement then runs in it, through the session, sees
its writes, commits nothing early and takes no second connection from the pool; a write
that commits unflushed (`unflushed_commit`) is refused there. `write_if` always runs on its
own connection: its caller has checked that the session holds nothing it must see.
"""

import json
from collections.abc import Callable, Iterable
from copy import copy
from dataclasses import dataclass
from datetime import date
from functools import cache, lru_cache, partial
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import make_transient_to_detached

from app.extensions import db, session_in_transaction

Row = TypeVar("Row")
Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Compiled:
    """A statement in a dialect: its SQL, how to pass its parameters, and how to turn its
    columns into Python values."""

    sql: str
    positions: tuple[str, ...] | None  # parameter names in order, for a positional DBAPI
    binds: dict[str, Processor]
    fixed: dict[str, object]  # the values the statement carries itself (`sa.literal`)
    results: tuple[Processor, ...]
    typed: tuple[tuple[int, Callable[[Any], Any]], ...]  # (position, processor) of typed columns
    unflushed: bool  # takes its values from `unflushed_commit`


def first_row(statement: sa.Executable, values: dict[str, object]) -> tuple | None:
    """The first row `statement` answers with `values` for its parameters (None when it
    answers none), its columns as the session would type them. `statement` is built once:
    it is compiled once per dialect."""
    found = _answer(statement, values, every_row=False)
    return found[0] if found else None


UNFLUSHED_COMMIT = "unflushed_commit"


def unflushed_commit() -> sa.CTE:
    """A one-row CTE for a PostgreSQL write to take its values from, so that the write's own
    transaction commits without waiting for its WAL to reach the disk (`synchronous_commit`
    off for that transaction alone): for a row whose loss in a database crash costs nothing
    (the idempotency claim: docs/decisions.md). `first_row` and `all_rows` refuse to run it
    in a transaction the session has open, where the setting would reach every write."""
    return sa.select(
        sa.func.set_config("synchronous_commit", "off", sa.true()).label("setting")
    ).cte(UNFLUSHED_COMMIT)


def all_rows(statement: sa.Executable, values: dict[str, object]) -> list[tuple]:
    """Every row `statement` answers with `values`, typed as `first_row` types them, fetched
    in one driver call. Through the session, a year of the stats' daily points (1,464 rows)
    was fetched a row per call and wrapped in SQLAlchemy's rows: most of its Python time."""
    return _answer(statement, values, every_row=True)


def _answer(statement: sa.Executable, values: dict[str, object], every_row: bool) -> list[tuple]:
    engine = db.engine
    compiled = _compiled(statement, engine.dialect)
    if session_in_transaction():
        if compiled.unflushed:
            raise ValueError("a write that commits unflushed must be a transaction of its own")
        answer = db.session.execute(statement, values)
        if not compiled.results:
            return []
        if every_row:
            return [tuple(row) for row in answer.all()]
        found = answer.first()
        return [] if found is None else [tuple(found)]
    return _typed(compiled, _run(engine, compiled, values, every_row))


def detached_copy(model: type[Row], row_id: str, **scope: object) -> Row | None:
    """The `model` row `row_id` whose columns equal `scope`, as a detached instance (None
    when there is none): what a session since closed would have left, for an answer only.
    To change the row, lock it (`services.locking.lock`), which loads it into the session."""
    found = first_row(_row_read(model, tuple(scope)), {"row_id": row_id, **scope})
    if found is None:
        return None
    instance = sa.inspect(model).class_manager.new_instance()
    return _detached(instance, zip(_attribute_keys(model), found, strict=True))


@cache
def _row_read(model: type, scope: tuple[str, ...]) -> sa.Select:
    return sa.select(*(prop.columns[0] for prop in sa.inspect(model).column_attrs)).where(
        model.id == sa.bindparam("row_id"),
        *(getattr(model, column) == sa.bindparam(column) for column in scope),
    )


@cache
def _attribute_keys(model: type) -> tuple[str, ...]:
    return tuple(prop.key for prop in sa.inspect(model).column_attrs)


@lru_cache(maxsize=64)  # bounded: a statement built per call would be slow, never a leak
def _compiled(statement: sa.Executable, dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    if "POSTCOMPILE" in compiled.string:
        raise ValueError("a statement whose SQL is completed per execution cannot run pooled")
    results = tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, None)
        for column in statement.exported_columns
    )
    return _Compiled(
        sql=compiled.string,
        positions=tuple(compiled.positiontup) if compiled.positional else None,
        binds={
            name: bind.type.dialect_impl(dialect).bind_processor(dialect)
            for name, bind in compiled.binds.items()
        },
        fixed={
            name: bind.effective_value for name, bind in compiled.binds.items() if not bind.required
        },
        results=results,
        typed=tuple(
            (position, process) for position, process in enumerate(results) if process is not None
        ),
        unflushed=f"{UNFLUSHED_COMMIT} AS" in compiled.string,
    )


def _typed(compiled: _Compiled, rows: list[tuple]) -> list[tuple]:
    """Rows with their columns typed as the session types them: only the few columns whose
    type has a result processor (JSON, enums) are touched, not every column of a row."""
    if not compiled.typed:
        return rows
    answer = []
    for row in rows:
        values = list(row)
        for position, process in compiled.typed:
            values[position] = process(values[position])
        answer.append(tuple(values))
    return answer


def _run(
    engine: sa.Engine, compiled: _Compiled, values: dict[str, object], every_row: bool = False
) -> list[tuple]:
    """The rows of `compiled` (the first only unless `every_row`), run in autocommit on a
    connection from the pool. A failure discards that connection rather than pool it in
    autocommit."""
    values = {**compiled.fixed, **values}
    parameters = {
        name: bind(values[name]) if bind else values[name] for name, bind in compiled.binds.items()
    }
    if compiled.positions is not None:
        parameters = [parameters[name] for name in compiled.positions]
    dialect = engine.dialect
    connection = engine.raw_connection()
    try:
        dialect.set_isolation_level(connection.dbapi_connection, "AUTOCOMMIT")
        cursor = connection.cursor()
        cursor.execute(compiled.sql, parameters)
        if not compiled.results:  # a write may answer no row
            found = []
        else:
            found = cursor.fetchall() if every_row else cursor.fetchmany(1)
        cursor.close()
        dialect.reset_isolation_level(connection.dbapi_connection)
    except dialect.loaded_dbapi.Error as error:
        connection.invalidate()
        raise sa.exc.DBAPIError.instance(
            compiled.sql, parameters, error, dialect.loaded_dbapi.Error
        ) from error  # as the session raises it: an IntegrityError is one here too
    except BaseException:
        connection.invalidate()
        raise
    finally:
        connection.close()
    return found


def write_if(
    guard: sa.Update, values: dict[str, object], rows: list[tuple[sa.Table, dict]]
) -> bool:
    """Insert `rows` (each a table and its column values, from `insert_values`) only if
    `guard`, an UPDATE, changes a row with `values`: one statement in autocommit, on a
    connection of its own, so the rows and the guarded change commit together or not at all.
    True when the guard changed a row. PostgreSQL only (data changes in WITH).

    A table's rows travel as one JSON parameter: a statement with a parameter per column
    (80 for a charge) was converted anew for every execution by the driver, which caches
    only short statements with few parameters."""
    batches: dict[tuple[sa.Table, tuple[str, ...]], list[dict]] = {}
    for table, row in rows:
        batches.setdefault((table, tuple(row)), []).append(row)
    engine = db.engine
    compiled = _compiled(_guarded_inserts(guard, tuple(batches)), engine.dialect)
    parameters = dict(values)
    for index, ((table, _columns), batch) in enumerate(batches.items()):
        parameters[f"rows_{index}"] = _as_json(table, batch, engine.dialect)
    [(changed,)] = _run(engine, compiled, parameters)
    return changed == 1


@lru_cache(maxsize=64)
def _guarded_inserts(guard: sa.Update, shape: tuple[tuple[sa.Table, tuple[str, ...]], ...]):
    """`WITH guarded AS (guard RETURNING 1), rows_0 AS (INSERT INTO t (…) SELECT … FROM
    jsonb_populate_recordset(NULL::t, :rows_0) JOIN guarded ON true), …
    SELECT count(*) FROM guarded`: the inserts take their rows through the guard's answer,
    so none happens when the guard changes nothing."""
    guarded = guard.returning(sa.literal_column("1")).cte("guarded")
    inserts = []
    for index, (table, columns) in enumerate(shape):
        records = sa.func.jsonb_populate_recordset(
            sa.literal_column(f"NULL::{table.name}"),
            sa.cast(sa.bindparam(f"rows_{index}", type_=sa.Text), JSONB),
        ).table_valued(name=f"r{index}")
        chosen = sa.select(
            *(sa.literal_column(f"r{index}.{name}") for name in columns)
        ).select_from(records.join(guarded, sa.true()))
        inserts.append(
            table.insert().from_select(columns, chosen, include_defaults=False).cte(f"rows_{index}")
        )
    return sa.select(sa.func.count()).select_from(guarded).add_cte(*inserts)


def _as_json(table: sa.Table, batch: list[dict], dialect: Dialect) -> str:
    """A table's rows as the JSON `jsonb_populate_recordset` reads: each value as the column's
    type binds it (an enum by name, a time in UTC), JSON columns as they are."""
    binds = _json_binds(table, dialect)
    return json.dumps(
        [
            {name: binds[name](value) if binds[name] else value for name, value in row.items()}
            for row in batch
        ],
        default=_iso,
    )


@lru_cache(maxsize=64)
def _json_binds(table: sa.Table, dialect: Dialect) -> dict[str, Processor]:
    return {
        column.name: None
        if isinstance(column.type.dialect_impl(dialect), sa.JSON)
        else column.type.dialect_impl(dialect).bind_processor(dialect)
        for column in table.columns
    }


def _iso(value: object) -> str:
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} has no JSON form for a row")


def insert_values(instance: object) -> dict[str, object]:
    """The column values a flush would insert for a new `instance`: what it was given, else
    its column's Python default; a column left to the server's default is left out."""
    values = {}
    for key, name, given, server_default in _insert_columns(type(instance)):
        if key in instance.__dict__:
            values[name] = instance.__dict__[key]
        elif given is not None:
            values[name] = given()
        elif not server_default:
            values[name] = None
    return values


@cache
def _insert_columns(model: type) -> tuple[tuple[str, str, Callable[[], object] | None, bool], ...]:
    """Per column of `model`: its attribute, its name, its Python default as a call, and
    whether the server has a default for it."""
    columns = []
    for prop in sa.inspect(model).column_attrs:
        column = prop.columns[0]
        default = column.default
        if default is None:
            given = None
        elif default.is_callable:
            given = partial(default.arg, None)
        elif default.is_scalar:
            given = partial(copy, default.arg)
        else:
            raise ValueError(f"{column} has a default a statement computes: flush it instead")
        columns.append((prop.key, column.name, given, column.server_default is not None))
    return tuple(columns)


def written(instance: Row, values: dict[str, object]) -> Row:
    """`instance`, new and written with `insert_values`, as the row it now is: detached, with
    those values loaded (what a session since closed would have left)."""
    keys = {name: key for key, name, _given, _server in _insert_columns(type(instance))}
    return _detached(instance, ((keys[name], value) for name, value in values.items()))


def _detached(instance: Row, loaded: Iterable[tuple[str, object]]) -> Row:
    """`instance` holding `loaded` (attribute, value) as a row read from the database, with
    that row's identity and no session: what the ORM's loader builds, then a close leaves."""
    instance.__dict__.update(loaded)
    make_transient_to_detached(instance)
    return instance
