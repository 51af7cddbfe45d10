"""Lone statements run straight on a pooled DBAPI connection in autocommit, for the hot
paths (issue 22): the idempotency claim, the account's velocity count and the charge read by
id (`detached_copy`).

Through the session, such a statement spent about two thirds of its interpreter time in
SQLAlchemy's session, connection and execution machinery, around a statement PostgreSQL
answers in microseconds. Here a statement, built once as a module constant or cached, is
compiled once per dialect with SQLAlchemy's own bind and result processors, then sent on a
connection taken from the engine's pool in autocommit (no BEGIN or COMMIT round trip): it
commits as it runs, so it is for statements that need no transaction. Like
`extensions.outside_transaction`, a transaction the session already has open is used as it
is: the statement then runs in it, sees its writes, commits nothing early and takes no second
connection from the pool.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import make_transient_to_detached

from app.extensions import db

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


def first_row(statement: sa.Executable, values: dict[str, object]) -> tuple | None:
    """The first row `statement` answers with `values` for its parameters (None when it
    answers none), its columns as the session would type them. `statement` is built once:
    it is compiled once per dialect."""
    engine = db.engine
    compiled = _compiled(statement, engine.dialect)
    if db.session().in_transaction():
        answer = db.session.execute(statement, values)
        found = answer.first() if compiled.results else None
        return None if found is None else tuple(found)
    found = _run(engine, compiled, values)
    if found is None:
        return None
    return tuple(
        process(value) if process else value
        for process, value in zip(compiled.results, found, strict=True)
    )


def detached_copy(model: type[Row], row_id: str, **scope: object) -> Row | None:
    """The `model` row `row_id` whose columns equal `scope`, as a detached instance (None
    when there is none): what a session since closed would have left, for an answer only.
    To change the row, lock it (`services.locking.lock`), which loads it into the session."""
    found = first_row(_row_read(model, tuple(scope)), {"row_id": row_id, **scope})
    if found is None:
        return None
    instance = sa.inspect(model).class_manager.new_instance()
    instance.__dict__.update(zip(_attribute_keys(model), found, strict=True))
    make_transient_to_detached(instance)
    return instance


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
        results=tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.exported_columns
        ),
    )


def _run(engine: sa.Engine, compiled: _Compiled, values: dict[str, object]) -> tuple | None:
    """The first row of `compiled`, run in autocommit on a connection from the pool. A
    failure discards that connection rather than pool it in autocommit."""
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
        found = cursor.fetchone() if compiled.results else None  # a write may answer no row
        cursor.close()
        dialect.reset_isolation_level(connection.dbapi_connection)
    except BaseException:
        connection.invalidate()
        raise
    finally:
        connection.close()
    return found
