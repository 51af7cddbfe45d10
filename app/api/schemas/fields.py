"""Field types and base schemas shared by the API schemas."""

import re
from datetime import UTC, date, datetime, time, timedelta

import marshmallow as ma
from email_validator import SPECIAL_USE_DOMAIN_NAMES

from app.services.idempotency import MAX_KEY_LENGTH, MIN_KEY_LENGTH

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII digits: `\d` takes any script's
_DIGITS = re.compile(r"[0-9]+")

NUL_FREE = r"^[^\x00]*$"
NUL_REFUSED = "Text may not contain the NUL character (U+0000)."
# The ids the service makes (`uuid4()`, lower case), so a well-formed id is published exactly.
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# What `str.strip()` trims (Python's whitespace) and ECMA-262's `\s`, with the control
# characters: a character outside this class is visible in both languages.
_BLANK = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# A CPF or CNPJ (the alphanumeric CNPJ included) with any of the formatting `strip_formatting`
# removes (. - / and spaces); the check digits `app.pix.documents` also requires are beyond a
# pattern, so TAX_ID_RULE says them.
TAX_ID = r"^[ ./-]*(?:(?:[0-9][ ./-]*){11}|(?:[0-9A-Z][ ./-]*){12}(?:[0-9][ ./-]*){2})$"
TAX_ID_RULE = (
    "A CPF (11 digits) or CNPJ (14 characters, letters in upper case), bare or formatted "
    "(. - / and spaces are removed), with valid check digits."
)


def _any_case(word: str) -> str:
    return "".join(f"[{char.upper()}{char}]" for char in word)


# An e-mail address (`format: email`) that `email_validator` takes: it refuses domains under
# the special-use names, such as example.test.
EMAIL = rf"^(?![\s\S]*[@.](?:{'|'.join(map(_any_case, SPECIAL_USE_DOMAIN_NAMES))})$)[^\x00]+$"


def trimmed_text(min_length: int) -> str:
    """A pattern for text of at least `min_length` characters once blanks at either end are
    trimmed, as the services trim it."""
    visible = f"[^{_BLANK}]"
    if min_length == 1:
        return rf"^[^\x00]*{visible}[^\x00]*$"
    return rf"^[^\x00]*{visible}[^\x00]{{{min_length - 2},}}{visible}[^\x00]*$"


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

    @classmethod
    def whole(cls, service_pattern: re.Pattern, error: str | None = None) -> "Pattern":
        """A service's own pattern (applied there with `fullmatch`), published anchored."""
        return cls(f"^{service_pattern.pattern}$", error=error)

    def __call__(self, value: str) -> str:
        if self.regex.fullmatch(value) is None:
            raise ma.ValidationError(self._format_error(value))
        return value


class Text(ma.fields.String):
    """Text that may hold anything but U+0000. PostgreSQL cannot store NUL, so every request
    holding one is refused (`app.errors.refuse_unstorable_text`); this pattern states that
    rule in the document. A field with a pattern of its own is a `String` with a `Pattern`
    whose classes leave U+0000 out: the document can carry one pattern per field."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if any(isinstance(v, ma.validate.Regexp) for v in self.validators):
            raise ValueError("A Text field takes no pattern: use String with a Pattern.")
        self.validators.append(Pattern(NUL_FREE, error=NUL_REFUSED))


class IdempotencyKey(Text):
    """A request body's idempotency key (`app.api.idempotency`), of the length
    `services.idempotency.validate_key` takes."""

    def __init__(self, *, description: str):
        super().__init__(
            required=True,
            validate=ma.validate.Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH),
            metadata={"description": description},
        )


class TaxId(ma.fields.String):
    """A CPF or CNPJ: the pattern states its shape, the description its check digits."""

    def __init__(self, *, metadata: dict | None = None, **kwargs):
        super().__init__(
            validate=[ma.validate.Length(max=32), Pattern(TAX_ID, error=TAX_ID_RULE)],
            metadata={"description": TAX_ID_RULE, "example": "529.982.247-25", **(metadata or {})},
            **kwargs,
        )


class Amount(ma.fields.Integer):
    """An amount to act on, in the currency's smallest unit: a JSON integer (never "100" or
    100.0) from 1 to `maximum` (unbounded when None); a refused one is `invalid_amount`."""

    def __init__(self, *, description: str, maximum: int | None = None, **kwargs):
        super().__init__(
            strict=True,
            validate=ma.validate.Range(min=1, max=maximum),
            metadata={"error_code": "invalid_amount", "description": description},
            **kwargs,
        )


class EmailAddress(ma.fields.String):
    """An e-mail address as `app.services.customers.email` takes it."""

    def __init__(self, **kwargs):
        super().__init__(
            validate=[
                ma.validate.Length(max=254),
                Pattern(EMAIL, error="Not a valid e-mail address."),
            ],
            metadata={"format": "email"},
            **kwargs,
        )


class StrictBoolean(ma.fields.Boolean):
    """JSON `true` or `false` only: "yes", 1 or "true" are refused, not guessed at."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class QueryInteger(ma.fields.Integer):
    """A whole number from `minimum` to `maximum` written in ASCII digits only: `int()` would
    also take " 10", "1_0" or "٣", which a query string should refuse rather than guess at.
    Both bounds are required so the document states what is enforced; any number of digits
    parses, so a value above the maximum gets the range's message, not "Not a valid integer"."""

    def __init__(self, *, minimum: int, maximum: int, **kwargs):
        super().__init__(validate=ma.validate.Range(min=minimum, max=maximum), **kwargs)
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or not _DIGITS.fullmatch(value):
            raise self.make_error("invalid", input=value)
        if len(value.lstrip("0")) > len(str(self.maximum)):
            return self.maximum + 1  # above the maximum, without converting thousands of digits
        return int(value)


class Day(ma.fields.Date):
    """A calendar day written `YYYY-MM-DD` and no other way (Python would also read
    `20261210`), as the published pattern says: a client and the service judge it alike."""

    def __init__(self, **kwargs):
        metadata = {"pattern": f"^{DAY.pattern}$", **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or not DAY.fullmatch(value):
            raise ma.ValidationError("Send a day as YYYY-MM-DD.")
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


class CursorPageSchema(ma.Schema):
    """A page of a cursor listing (`app.api.pages.cursor_page`); a subclass declares `data`."""

    object = ma.fields.String(metadata={"enum": ["list"]})
    has_more = ma.fields.Boolean()
    next_cursor = ma.fields.String(allow_none=True)


class NumberedPageSchema(ma.Schema):
    """A numbered page (`app.api.pages.numbered_page`); a subclass declares `data`."""

    total = ma.fields.Integer()
    page = ma.fields.Integer()
    limit = ma.fields.Integer()
