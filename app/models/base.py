"""Column types and helpers every model uses: UTC timestamps, ids, portable JSON."""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


# The largest page number or row offset a list takes (API and dashboard): PostgreSQL's
# `integer`, so the offset a page makes, (page - 1) * limit, stays far inside the 64-bit
# OFFSET of SQLite and PostgreSQL.
MAX_PAGE_OR_OFFSET = 2**31 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no zone of its own)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use timezone-aware UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def search_text(*columns: str) -> str:
    """The SQL of what a list's search box looks through (`services.search`): the columns,
    lowercased, joined by spaces, an empty one as nothing. The same text on PostgreSQL and
    SQLite (both read `->>` on JSON), and on PostgreSQL the exact expression a trigram index
    covers (migration 0012_search), so `LIKE '%text%'` reads the index, not the table."""
    joined = " || ' ' || ".join(f"coalesce({column}, '')" for column in columns)
    return f"lower({joined})"
