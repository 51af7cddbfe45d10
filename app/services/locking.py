"""The row lock every state change takes first: `SELECT … FOR UPDATE`, so a job, a request and
a provider's callback acting on the same record take turns instead of racing."""

from typing import TypeVar

import sqlalchemy as sa

from app.extensions import db

Row = TypeVar("Row")


def lock(model: type[Row], row_id: str) -> Row | None:
    """The `model` row with id `row_id`, locked until commit and re-read from the database
    (the session's copy may predate the lock); None when there is no such row."""
    return db.session.scalar(
        sa.select(model)
        .where(model.id == row_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
