"""Rows behind the API's back: moving a row's clock or state, for tests that need time to
pass, and emptying every table between tests."""

import sqlalchemy as sa

from app.extensions import db


def update_row(app, model, row_id: str, **values) -> None:
    """Set columns of one row of `model` by id, committed."""
    with app.app_context():
        db.session.execute(sa.update(model).where(model.id == row_id).values(**values))
        db.session.commit()


EMPTYING_ATTEMPTS = 3


def empty_tables(app) -> None:
    """Delete every row of every table (children first), committed. A process of the
    deployed stack may commit a child row between two of the deletes (the daily totals'
    fold, run by `rq cron`, did: the accounts' delete then broke its foreign key); the
    emptying is then done again."""
    with app.app_context():
        for attempt in range(1, EMPTYING_ATTEMPTS + 1):
            db.session.rollback()
            try:
                for table in reversed(db.metadata.sorted_tables):
                    db.session.execute(table.delete())
                db.session.commit()
                return
            except sa.exc.IntegrityError:
                if attempt == EMPTYING_ATTEMPTS:
                    raise
