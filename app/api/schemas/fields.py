"""Field types and base schemas shared by the API schemas."""

import re
from datetime import UTC, date, datetime, time, timedelta

import marshmallow as ma

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_DIGITS = re.compile(r"[0-9]{1,9}")


class Pattern(ma.validate.Regexp):
    """A pattern the OpenAPI document publishes as written, so clients that validate with the
    document agree with the service: ECMA-262 syntax (what OpenAPI and JSON Schema use),
    anchored `^…$`, with explicit classes such as `[0-9]` (Python's `\\d` and `\\w` take any
    script's digits and letters). Python's `$` also matches before a final newline, so the
    service applies it with `fullmatch`."""

    def __init__(self, pattern: str, error: str | None = None):
        if not (pattern.startswith("^") and pattern.endswith("$")):
            raise ValueError(f"A published pattern is anchored ^…$: {pattern!r}")
        super().__init__(pattern, error=error)

    def __call__(self, value: str) -> str:
        if self.regex.fullmatch(value) is None:
            raise ma.ValidationError(self._format_error(value))
        return value


class StrictBoolean(ma.fields.Boolean):
    """JSON `true` or `false` only: "yes", 1 or "true" are refused, not guessed at."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class QueryInteger(ma.fields.Integer):
    """A whole number written in ASCII digits only: `int()` would also take " 10", "1_0"
    or "٣", which a query string should refuse rather than guess at."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or not _DIGITS.fullmatch(value):
            raise self.make_error("invalid", input=value)
        return super()._deserialize(value, attr, data, **kwargs)


class UtcDateTime(ma.fields.AwareDateTime):
    """An ISO 8601 date-time held in UTC (UTC when it has no zone). An instant UTC cannot hold
    (a zone pushing year 1 or 9999 over the edge) is a 400, never an error in the database."""

    def __init__(self, **kwargs):
        super().__init__(default_timezone=UTC, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        moment = super()._deserialize(value, attr, data, **kwargs)
        try:
            return moment.astimezone(UTC)
        except OverflowError as error:
            raise ma.ValidationError("The date is out of range.") from error


class DateTimeParam(UtcDateTime):
    """A date-time only. A bare date is refused: as an inclusive upper bound it would
    silently mean midnight and drop the whole day."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
            raise ma.ValidationError("Send a date-time, such as 2026-11-01T00:00:00Z.")
        return super()._deserialize(value, attr, data, **kwargs)


class QueryArgsSchema(ma.Schema):
    """Query strings where nothing is silently ignored: unknown and repeated parameters are
    400, never dropped or reduced to their first value."""

    class Meta:
        unknown = ma.RAISE

    @ma.pre_load
    def _refuse_repeats(self, data, **kwargs):
        getlist = getattr(data, "getlist", None)
        if getlist is not None:
            repeated = {
                name: ["Send this parameter once."] for name in data if len(getlist(name)) > 1
            }
            if repeated:
                raise ma.ValidationError(repeated)
        return data


class DateBoundParam(UtcDateTime):
    """A date-time, or a bare date meaning its whole UTC day: its first instant as a lower
    bound (`end=False`), its last as an inclusive upper bound (`end=True`), so
    `endDate=2026-11-21` keeps everything created that day."""

    def __init__(self, *, end: bool, **kwargs):
        super().__init__(**kwargs)
        self.end = end

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
            try:
                day = date.fromisoformat(value.strip())
            except ValueError as error:
                raise ma.ValidationError("Not a valid date.") from error
            start = datetime.combine(day, time.min, tzinfo=UTC)
            return start + timedelta(days=1, microseconds=-1) if self.end else start
        return super()._deserialize(value, attr, data, **kwargs)
