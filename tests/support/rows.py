"""Rows behind the API's back: moving a row's clock or state, for tests that need time to
pass, and emptying every table between tests."""

import sqlalchemy as sa

from app.extensions import db


def update_row(app, model, row_id: str, **values) -> None:
    """Set columns of one row of `model` by id, committed."""
    with app.app_context():
        db.session.execute(sa.update(model).where(model.id == row_id).values(**values))
        db.session.commit()


def empty_tables(app) -> None:
    """Delete every row of every table (children first), committed."""
    with app.app_context():
        db.session.rollback()
        for table in reversed(db.metadata.sorted_tables):
            db.session.execute(table.delete())
        db.session.commit()
