"""The `due` object of a charge with a due date, as merchants send it; `app.pix.due` holds
the terms it becomes and every rule between its values (checked by the service, so the
dashboard's form gets the same answers)."""

import marshmallow as ma

from app.api.schemas.fields import DAY, Day
from app.pix import due

VALUE_RULE = (
    "Centavos (an integer) for the fixed types; for the percent types, a number of percent "
    "with at most two decimal places (2.5 means 2,5 %)."
)


class DueValue(ma.fields.Decimal):
    """A JSON number, read exactly: fixed values stay integers, percentages become
    `Decimal`. Strings and booleans are refused, as for amounts."""

    def __init__(self, **kwargs):
        super().__init__(
            required=True, metadata={"type": "number", "description": VALUE_RULE}, **kwargs
        )

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ma.ValidationError("Send a number.")
        number = super()._deserialize(value, attr, data, **kwargs)
        return int(number) if number == number.to_integral_value() else number


def _type_field(types: tuple[str, ...]) -> ma.fields.String:
    return ma.fields.String(required=True, validate=ma.validate.OneOf(types))


class FixedOrPercentSchema(ma.Schema):
    """A fine or a rebate: an amount, or a percentage of the original amount."""

    type = _type_field(due.FINE_TYPES)
    value = DueValue()

    @ma.post_load
    def _to_terms(self, data, **kwargs) -> due.FixedOrPercent:
        return due.FixedOrPercent(data["type"], data["value"])


class InterestSchema(ma.Schema):
    type = _type_field(due.INTEREST_TYPES)
    value = DueValue()

    @ma.post_load
    def _to_terms(self, data, **kwargs) -> due.Interest:
        return due.Interest(data["type"], data["value"])


class DatedDiscountSchema(ma.Schema):
    until = Day(required=True, metadata={"description": "YYYY-MM-DD, inclusive."})
    type = _type_field(due.DATED_DISCOUNT_TYPES)
    value = DueValue()

    @ma.post_load
    def _to_terms(self, data, **kwargs) -> due.DatedDiscount:
        return due.DatedDiscount(data["until"], data["type"], data["value"])


class DailyDiscountSchema(ma.Schema):
    type = _type_field(due.DAILY_DISCOUNT_TYPES)
    value = DueValue()

    @ma.post_load
    def _to_terms(self, data, **kwargs) -> due.DailyDiscount:
        return due.DailyDiscount(data["type"], data["value"])


def _rule_document(types: tuple[str, ...], dated: bool) -> dict:
    """A discount's schema for the OpenAPI document (a field that takes two shapes can only
    describe them inline)."""
    properties = {
        "type": {"type": "string", "enum": list(types)},
        "value": {"type": "number", "description": VALUE_RULE},
    }
    if dated:
        until = {"type": "string", "format": "date", "pattern": f"^{DAY.pattern}$"}
        properties = {"until": until, **properties}
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }


class Discounts(ma.fields.Field):
    """Up to three dated tiers (a list), or one discount per day of early payment (an
    object): the standard's two families of discount, one at a time."""

    def __init__(self, **kwargs):
        super().__init__(
            allow_none=True,
            metadata={
                "oneOf": [
                    {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": due.MAX_DATED_DISCOUNTS,
                        "items": _rule_document(due.DATED_DISCOUNT_TYPES, dated=True),
                    },
                    _rule_document(due.DAILY_DISCOUNT_TYPES, dated=False),
                ],
                "description": "Dated tiers (the largest whose until has not passed applies) "
                "or an amount per calendar day paid before the due date.",
            },
            **kwargs,
        )
        self._dated = ma.fields.List(
            ma.fields.Nested(DatedDiscountSchema),
            validate=ma.validate.Length(min=1, max=due.MAX_DATED_DISCOUNTS),
        )
        self._daily = ma.fields.Nested(DailyDiscountSchema)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, list):
            return tuple(self._dated.deserialize(value, attr, data, **kwargs))
        if isinstance(value, dict):
            return self._daily.deserialize(value, attr, data, **kwargs)
        raise ma.ValidationError("Send a list of dated discounts or one daily discount.")


class DueInputSchema(ma.Schema):
    date = Day(required=True, metadata={"description": "The due date in São Paulo, YYYY-MM-DD."})
    days_valid_after = ma.fields.Integer(
        strict=True,
        load_default=0,
        validate=ma.validate.Range(min=0, max=due.MAX_DAYS_VALID_AFTER),
        metadata={"description": "Calendar days it stays payable after the due date."},
    )
    fine = ma.fields.Nested(FixedOrPercentSchema, allow_none=True)
    interest = ma.fields.Nested(InterestSchema, allow_none=True)
    discounts = Discounts()
    rebate = ma.fields.Nested(FixedOrPercentSchema, allow_none=True)

    @ma.post_load
    def _to_terms(self, data, **kwargs) -> due.DueTerms:
        return due.DueTerms(
            date=data["date"],
            days_valid_after=data["days_valid_after"],
            fine=data.get("fine"),
            interest=data.get("interest"),
            discounts=data.get("discounts"),
            rebate=data.get("rebate"),
        )
