"""Moving a row's clock or state behind the API's back, for tests that need time to pass."""

import sqlalchemy as sa

from app.extensions import db


def update_row(app, model, row_id: str, **values) -> None:
    """Set columns of one row of `model` by id, committed."""
    with app.app_context():
        db.session.execute(sa.update(model).where(model.id == row_id).values(**values))
        db.session.commit()
