"""List filters kept in the query string, so reloads, shared links and page links keep them;
and the date fields they share (São Paulo calendar days)."""

import re
from dataclasses import asdict, fields, replace
from datetime import UTC, date, datetime, time
from typing import ClassVar

from flask import request

from app.errors import InvalidRequest
from app.templating import DISPLAY_TIMEZONE

DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class QueryFilters:
    """Mixin for a frozen dataclass of filters; `args()` builds a link's query string."""

    OMITTED_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("page",)

    def args(self, **changes) -> dict:
        """Query-string arguments for a link to this list with `changes` applied; empty
        filters, and paging fields at their default, are left out of the address."""
        values = asdict(replace(self, **changes))
        defaults = {f.name: f.default for f in fields(self)}
        for name in self.OMITTED_AT_DEFAULT:
            if values.get(name) == defaults.get(name):
                values.pop(name, None)
        return {name: value for name, value in values.items() if value is not None}


def date_arg(name: str) -> str | None:
    """A YYYY-MM-DD day (São Paulo calendar), as typed in a date field."""
    text = (request.args.get(name) or "").strip()
    if not text:
        return None
    try:
        if not DATE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise InvalidRequest(f"{name} is a date, like 2026-11-21.", param=name) from None


def day_start(day: str) -> datetime:
    """00:00 in São Paulo of a calendar day, in UTC."""
    midnight = datetime.combine(date.fromisoformat(day), time.min, tzinfo=DISPLAY_TIMEZONE)
    return midnight.astimezone(UTC)
