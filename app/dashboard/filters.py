"""List filters kept in the query string, so reloads, shared links and page links keep them."""

from dataclasses import asdict, fields, replace
from typing import ClassVar


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
