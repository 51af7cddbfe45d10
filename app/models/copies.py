"""A row read by key straight on a pooled DBAPI connection, as a detached instance: for reads
whose answer is all the caller needs, such as `GET /v1/charges/<id>` (issue 22).

Through the session, a lone read by id spent about two thirds of its interpreter time in
SQLAlchemy's session, connection and ORM loading, around a statement PostgreSQL answers in
microseconds. This runs the same SELECT, compiled once per model, scope and dialect, with
SQLAlchemy's own bind and result processors for each column, on a connection taken from the
engine's pool in autocommit (no BEGIN or ROLLBACK round trip). The instance it builds holds
the row's values and the row's identity, like one loaded by a session since closed: reading
it is all a caller may do. To change the row, lock it (`services.locking.lock`), which loads
it into the session.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import make_transient_to_detached

from app.extensions import db

Row = TypeVar("Row")
Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Read:
    """A compiled read: its SQL, how to pass its parameters, how to turn its columns into
    attribute values."""

    sql: str
    positions: tuple[str, ...] | None  # parameter names in order, for a positional DBAPI
    binds: dict[str, Processor]
    attributes: tuple[tuple[str, Processor], ...]  # (attribute key, result processor)


def detached_copy(model: type[Row], row_id: str, **scope: object) -> Row | None:
    """The `model` row `row_id` whose columns equal `scope`, read on a pooled connection of
    its own (so only what is committed), as a detached instance; None when there is none."""
    read = _compiled(model, tuple(scope), db.engine.dialect)
    found = _fetch_one(read, {"row_id": row_id, **scope})
    if found is None:
        return None
    instance = sa.inspect(model).class_manager.new_instance()
    instance.__dict__.update(
        (key, process(value) if process else value)
        for (key, process), value in zip(read.attributes, found, strict=True)
    )
    make_transient_to_detached(instance)
    return instance


def _fetch_one(read: _Read, values: dict[str, object]) -> tuple | None:
    """The first row `read` finds, in autocommit on a connection from the pool. A failure
    discards that connection rather than pool it in autocommit."""
    parameters = {
        name: bind(values[name]) if bind else values[name] for name, bind in read.binds.items()
    }
    if read.positions is not None:
        parameters = [parameters[name] for name in read.positions]
    dialect = db.engine.dialect
    connection = db.engine.raw_connection()
    try:
        dialect.set_isolation_level(connection.dbapi_connection, "AUTOCOMMIT")
        cursor = connection.cursor()
        cursor.execute(read.sql, parameters)
        found = cursor.fetchone()
        cursor.close()
        dialect.reset_isolation_level(connection.dbapi_connection)
    except BaseException:
        connection.invalidate()
        raise
    finally:
        connection.close()
    return found


@cache
def _compiled(model: type, scope: tuple[str, ...], dialect: Dialect) -> _Read:
    mapper = sa.inspect(model)
    properties = mapper.column_attrs
    statement = sa.select(*(prop.columns[0] for prop in properties)).where(
        model.id == sa.bindparam("row_id"),
        *(getattr(model, column) == sa.bindparam(column) for column in scope),
    )
    compiled = statement.compile(dialect=dialect)
    bind_types = {name: compiled.binds[name].type for name in ("row_id", *scope)}
    return _Read(
        sql=compiled.string,
        positions=tuple(compiled.positiontup) if compiled.positional else None,
        binds={
            name: kind.dialect_impl(dialect).bind_processor(dialect)
            for name, kind in bind_types.items()
        },
        attributes=tuple(
            (prop.key, prop.columns[0].type.dialect_impl(dialect).result_processor(dialect, None))
            for prop in properties
        ),
    )
