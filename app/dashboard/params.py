"""The dashboard's query strings, read in one place: the mode, page numbers and sizes, choices
from a list, and calendar days in the account's zone (`i18n.select_timezone`) with the UTC
instants they span.

Filters live in the query string so a reload, a bookmark or a shared link shows the same list;
each list's filters are a frozen dataclass with `QueryFilters.args()` to build its links. A
value out of range is a 400 naming the parameter, as the API answers, except a list's dates:
someone types those, so `day_range_arg` hands their problem to the page to show beside them.
"""

import re
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import ClassVar

from flask import g, request
from flask_babel import get_timezone
from flask_babel import lazy_gettext as _l

from app.errors import InvalidRequest
from app.models import KeyMode
from app.models.base import MAX_PAGE_OR_OFFSET
from app.services import search
from app.services.transactions.payment_listing import DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT
from app.templating import ISO_DAY

MODES = {"test": KeyMode.TEST, "live": KeyMode.LIVE}
DAY_FIRST = re.compile(r"(?P<day>[0-9]{1,2})/(?P<month>[0-9]{1,2})/(?P<year>[0-9]{4})")


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


def mode_arg() -> str:
    """`mode` from the address, test unless asked, as the page's `shown_mode`."""
    mode = request.args.get("mode") or "test"
    if mode not in MODES:
        raise InvalidRequest("mode is test or live.", param="mode")
    return shown_mode(mode)


def shown_mode(mode: str) -> str:
    """Record `mode` as the one the page shows: the layout names it in the bar under the top
    bar (red in live) and keeps it in the navigation's links (`g.dashboard_mode`). A view
    records it before rendering, by `mode_arg` or, when its form carries the mode instead of
    the address (the Pix payout form, the test-only forms), here: a form shown again with
    its errors then keeps the banner of the page it was sent from."""
    g.dashboard_mode = mode
    return mode


def number_arg(name: str, maximum: int, default: int | None) -> int | None:
    """A whole number from 1 to `maximum`, `default` when absent. The length is checked before
    `int()`, which refuses (or takes long over) thousands of digits."""
    text = request.args.get(name) or None
    if text is None:
        return default
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(maximum))
    if not (digits and 1 <= int(text) <= maximum):
        raise InvalidRequest(f"{name} is a number from 1 to {maximum}.", param=name)
    return int(text)


def page_arg() -> int:
    return number_arg("page", MAX_PAGE_OR_OFFSET, 1)


def limit_arg(default: int | None = DEFAULT_PAGE_LIMIT) -> int | None:
    """Rows per page, bounded as `GET /v1/payments` bounds them."""
    return number_arg("limit", MAX_PAGE_LIMIT, default)


def search_arg() -> str | None:
    """`q`, the list's search box (`services.search`): nothing to search is no filter."""
    return search.search_text(request.args.get("q"))


def choice_arg(name: str, allowed: tuple[str, ...], refusal: str | None = None) -> str | None:
    """One of `allowed`, or None when absent; `refusal` replaces a message listing them all."""
    value = request.args.get(name) or None
    if value is not None and value not in allowed:
        message = refusal or f"{name} is one of: {', '.join(allowed)}."
        raise InvalidRequest(message, param=name)
    return value


@dataclass(frozen=True)
class DayRange:
    """A list's two date fields as typed (`typed`, by field name), and the days they
    filter by, in order. When they cannot filter (`problems`, by field name, in the page's
    words), neither day is used: the list shows the other filters' rows, and the form shows
    the days again with the problem beside the field at fault."""

    first: str | None = None
    last: str | None = None
    typed: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


# The page's words for a day that cannot filter, shown beside its field (lazy: in the
# language of the page that shows them).
UNREADABLE_DAY = _l("Not a day: type it day first, like 21/11/2026.")
REVERSED_DAYS = _l("After the last day, so nothing could match: swap the two days.")


def day_range_arg(first: str, last: str) -> DayRange:
    """Two YYYY-MM-DD days (the account's calendar) as typed in a list's date fields; never a 400,
    so a slip in a date field keeps the page and every other filter."""
    typed = {name: (request.args.get(name) or "").strip() for name in (first, last)}
    days = {name: _day(text) for name, text in typed.items()}
    problems = {name: UNREADABLE_DAY for name, text in typed.items() if text and not days[name]}
    if not problems and days[first] and days[last] and days[first] > days[last]:
        problems[first] = REVERSED_DAYS
    if problems:
        return DayRange(typed=typed, problems=problems)
    return DayRange(days[first], days[last], typed)


def date_range_args(first: str, last: str) -> tuple[str | None, str | None]:
    """`day_range_arg`'s days, for a request with no form to show a problem in (an export):
    a 400 naming the field instead."""
    days = day_range_arg(first, last)
    if days.problems:
        name, problem = next(iter(days.problems.items()))
        raise InvalidRequest(f"{name}: {problem}", param=name)
    return days.first, days.last


def day_bounds(first: str | None, last: str | None) -> tuple[datetime | None, datetime | None]:
    """Where the account's days `first` to `last` (both included) begin and end, in UTC: the
    first instant of `first` and the first instant after `last`; None where a day is not
    given. Services bound their lists either way, so callers shift by a microsecond."""
    start = _midnight(date.fromisoformat(first)) if first else None
    stop = _midnight(date.fromisoformat(last) + timedelta(days=1)) if last else None
    return start, stop


def _day(text: str) -> str | None:
    """`text` as a YYYY-MM-DD day, or None when it is none. People type days first, as the
    fields show them (21/11/2026, in every locale); links carry them as 2026-11-21."""
    try:
        if ISO_DAY.fullmatch(text):
            return date.fromisoformat(text).isoformat()
        if typed := DAY_FIRST.fullmatch(text):
            return date(*(int(typed[part]) for part in ("year", "month", "day"))).isoformat()
    except ValueError:  # 2026-02-30, 30/02/2026
        return None
    return None


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=get_timezone()).astimezone(UTC)
