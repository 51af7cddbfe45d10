"""Whether a statement ran inside a transaction, read off the driver's connection: for the
statements that run alone in autocommit (`app.extensions.outside_transaction`)."""

import sqlite3
from collections.abc import Callable
from typing import TypeVar

import psycopg
import sqlalchemy as sa

from app.extensions import db

Answer = TypeVar("Answer")


def open_after(app, statement_start: str, call: Callable[[], Answer]) -> tuple[Answer, list[bool]]:
    """What `call` returns, and for each statement beginning with `statement_start` that it
    runs, whether a transaction was open on its connection just after it ran."""
    found = []

    def after_execute(connection, _cursor, statement, *_):
        if statement.startswith(statement_start):
            found.append(_in_transaction(connection.connection.dbapi_connection))

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "after_cursor_execute", after_execute)
    try:
        answer = call()
    finally:
        sa.event.remove(engine, "after_cursor_execute", after_execute)
    return answer, found


def _in_transaction(dbapi_connection) -> bool:
    if isinstance(dbapi_connection, sqlite3.Connection):
        return dbapi_connection.in_transaction
    return dbapi_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
