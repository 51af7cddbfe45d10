"""Whether a statement ran inside a transaction, read off the driver's connection: for the
statements that run alone in autocommit (`app.extensions.outside_transaction`, and the reads
straight on the pool of `app.models.pooled`, which no SQLAlchemy event sees); and how many
times a session committed (`app.queueing.commit` skips the empty commits)."""

import sqlite3
from collections.abc import Callable
from typing import TypeVar
from unittest import mock

import psycopg
import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.pool import _ConnectionFairy

Answer = TypeVar("Answer")


def open_after(
    app, statement_start: str | tuple[str, ...], call: Callable[[], Answer]
) -> tuple[Answer, list[bool]]:
    """What `call` returns, and for each statement beginning with `statement_start` (or with
    one of them) that it runs, whether a transaction was open on its connection just after
    it ran."""
    found = []
    pooled_cursor = _ConnectionFairy.cursor

    def cursor(pooled, *args, **kwargs):
        return _Recording(pooled_cursor(pooled, *args, **kwargs), pooled, statement_start, found)

    with mock.patch.object(_ConnectionFairy, "cursor", cursor):
        answer = call()
    return answer, found


class _Recording:
    """A driver's cursor whose `execute` notes whether a transaction is open on its
    connection after each statement beginning with `start`; every other use goes through."""

    def __init__(self, cursor, pooled, start: str | tuple[str, ...], found: list[bool]):
        self._cursor, self._pooled, self._start, self._found = cursor, pooled, start, found

    def execute(self, statement, *args, **kwargs):
        result = self._cursor.execute(statement, *args, **kwargs)
        if statement.startswith(self._start):
            self._found.append(_in_transaction(self._pooled.dbapi_connection))
        return result

    def __iter__(self):
        return iter(self._cursor)

    def __getattr__(self, name):
        return getattr(self._cursor, name)


def _in_transaction(dbapi_connection) -> bool:
    if isinstance(dbapi_connection, sqlite3.Connection):
        return dbapi_connection.in_transaction
    return dbapi_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


def commits_during(call: Callable[[], Answer]) -> tuple[Answer, int]:
    """What `call` returns, and how many times a session committed while it ran."""
    commits = []

    def note(_session) -> None:
        commits.append(True)

    sa.event.listen(Session, "after_commit", note)
    try:
        answer = call()
    finally:
        sa.event.remove(Session, "after_commit", note)
    return answer, len(commits)
