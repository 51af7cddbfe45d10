"""A request's new rows written in the statement that stores its answer (issue 22).

Creating a charge adds a transaction and its events to the session and nothing else; the
idempotency key's answer then commits with them. Through the ORM that was a BEGIN, five
statements (the events by a pipelined executemany) and a COMMIT, and the unit of work's
bookkeeping around them: a third of a charge's CPU. Here the same rows go in one statement
in autocommit, each INSERT taking its row from the answer's UPDATE (`pooled.write_if`), so
they commit together with the answer or not at all, as before.

Only rows whose flush hooks this module repeats are written so: a `Transaction` (its daily
total change, `payment_totals.changes_of_new`) and an `Event` (none). Anything else in the
session, a change to a loaded row, an open transaction (a lock, a read that must hold) or
another database than PostgreSQL leaves the session to flush as usual.
"""

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.extensions import db
from app.models import Event, PaymentTotalChange, Transaction, pooled
from app.services.transactions import payment_totals

WRITTEN_ALONE = (Transaction, Event)


def writable_alone(session: Session) -> bool:
    """Does the session hold only new rows this module writes, with no connection in a
    transaction (adding a row begins the session's transaction, not the database's)?"""
    return (
        db.engine.dialect.name == "postgresql"
        and not session.info.get(_BEGUN)
        and bool(session.new)
        and not session.dirty
        and not session.deleted
        and all(type(instance) in WRITTEN_ALONE for instance in session.new)
    )


def write_with(session: Session, guard: sa.Update, values: dict[str, object]) -> bool:
    """Write the session's new rows if `guard` (an UPDATE) changes a row with `values`, in
    one statement; True when it did. The rows written leave the session, detached."""
    instances = list(session.new)
    inserted = [pooled.insert_values(instance) for instance in instances]
    transactions = [instance for instance in instances if isinstance(instance, Transaction)]
    rows = [(instance.__table__, row) for instance, row in zip(instances, inserted, strict=True)]
    rows += [(_CHANGES, change) for change in payment_totals.changes_of_new(transactions)]
    if not pooled.write_if(guard, values, rows):
        return False
    for instance, row in zip(instances, inserted, strict=True):
        session.expunge(instance)
        pooled.written(instance, row)
    return True


_CHANGES = PaymentTotalChange.__table__
_BEGUN = "new_rows.begun"  # session.info: a connection began the session's transaction


@sa.event.listens_for(Session, "after_begin")
def _note_begun(session: Session, _transaction, _connection) -> None:
    session.info[_BEGUN] = True


@sa.event.listens_for(Session, "after_transaction_end")
def _note_ended(session: Session, transaction) -> None:
    if transaction.parent is None:
        session.info.pop(_BEGUN, None)
