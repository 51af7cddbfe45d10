"""Form fields the forms of several domains share: an amount typed as text and held as integer
minor units (payments, payouts, disputes), and the longest Pix key (refunds, payouts)."""

import re
from decimal import Decimal

from flask_wtf import FlaskForm
from wtforms import StringField
from wtforms.validators import StopValidation

from app.formats.money import DECIMAL_COMMA, format_money

REAIS = re.compile(r"([0-9]+)(?:[.,]([0-9]+))?")
MAX_REAIS_LENGTH = 20
MAX_PIX_KEY_LENGTH = 77  # as on the API: the longest key, an e-mail


def to_minor_units(text: str, unit: str = "reais", fraction: str = "centavos") -> int:
    """An amount as typed in `unit` ("12,34") → integer minor units (1234), never a float."""
    match = REAIS.fullmatch(text.strip()) if len(text) <= MAX_REAIS_LENGTH else None
    if match is None:
        raise ValueError(f"Enter an amount in {unit}, like 12,34.")
    units, decimals = match.groups()
    if decimals is not None and len(decimals) > 2:
        raise ValueError(f"Use at most two decimal places ({fraction}), like 12,34.")
    minor = int(Decimal(f"{units}.{decimals or 0}") * 100)
    if minor <= 0:
        raise ValueError("Enter an amount greater than zero.")
    return minor


class ReaisField(StringField):
    """Typed as reais, held as integer centavos; the text typed is shown back on errors."""

    UNIT, FRACTION = "reais", "centavos"
    OPTIONAL = False  # True: left empty means "not given" (None), not an error

    def process_formdata(self, valuelist: list[str]) -> None:
        self.data = None
        if valuelist and (valuelist[0].strip() or not self.OPTIONAL):
            self.data = to_minor_units(valuelist[0], self.UNIT, self.FRACTION)

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data is None and not self.process_errors and not self.OPTIONAL:
            raise StopValidation(f"Enter an amount in {self.UNIT}, like 12,34.")

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else format_money(self.data, notation=DECIMAL_COMMA)


class AmountField(ReaisField):
    """An amount in the payment's currency (two decimal places, like the money filter)."""

    UNIT, FRACTION = "the payment's currency", "cents"


class OptionalAmountField(AmountField):
    OPTIONAL = True
