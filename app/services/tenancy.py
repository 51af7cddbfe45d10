"""One row of the caller's, or 404: every lookup of account data is scoped to the caller's
account (and mode), and a row of another account answers exactly as a row that does not
exist, so an id guessed or leaked from elsewhere tells nothing."""

from typing import TypeVar

import sqlalchemy as sa

from app.errors import NotFound
from app.extensions import db

Row = TypeVar("Row")


def owned(model: type[Row], row_id: str, missing: str, **scope: object) -> Row:
    """The `model` row `row_id` whose columns equal `scope` (`account_id=…, mode=…`);
    NotFound(`missing`) otherwise."""
    conditions = [getattr(model, column) == value for column, value in scope.items()]
    row = db.session.scalar(sa.select(model).where(model.id == row_id, *conditions))
    if row is None:
        raise NotFound(missing)
    return row
