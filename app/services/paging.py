"""Pages of a list by offset (the API's `page`/`limit` or `offset`/`limit`, the dashboard's
pages): the total it matches, counted by the list's own filters, and the rows of one page."""

from dataclasses import dataclass
from typing import Generic, TypeVar

import sqlalchemy as sa

from app.extensions import db

Row = TypeVar("Row")


@dataclass(frozen=True)
class Page(Generic[Row]):
    rows: list[Row]
    total: int


def paged(query: sa.Select, page: int, per_page: int) -> Page:
    """Page `page` (from 1) of `query`, which fixes the order, and how many rows it matches."""
    return window(query, (page - 1) * per_page, per_page)


def window(query: sa.Select, offset: int, limit: int) -> Page:
    """`limit` rows of `query`, which fixes the order, from `offset`, and how many it matches."""
    counting = query.with_only_columns(sa.func.count(), maintain_column_froms=True)
    total = db.session.scalar(counting.order_by(None))
    rows = db.session.scalars(query.offset(offset).limit(limit)).all()
    return Page(rows=list(rows), total=total)
