"""Form fields the forms of several domains share: an amount typed as text and held as integer
minor units (payments, payouts, disputes), and the longest Pix key (refunds, payouts)."""

import re

from flask_wtf import FlaskForm
from wtforms import StringField
from wtforms.validators import StopValidation

from app.formats.money import DECIMAL_COMMA, format_money

MAX_REAIS_LENGTH = 20  # "R$ 9.999.999.999,99" is 19, once the spaces around it are cut
MAX_PIX_KEY_LENGTH = 77  # as on the API: the longest key, an e-mail

REAIS_SYMBOL = "R$"
SIGN_THEN_NUMBER = re.compile(r"([^0-9.,+\s]*)\s*(.*)", re.DOTALL)  # "R$ 12,34", "€12", "12"
NUMBER = re.compile(r"[0-9.,]*[0-9][0-9.,]*")  # ASCII digits only: `\d` takes any script's
SPACED_NUMBER = re.compile(r"[0-9.,]+(?:\s+[0-9.,]+)+")  # "1 234,56"
THOUSANDS = re.compile(r"[1-9][0-9]{0,2}(?:\.[0-9]{3})+")  # "1.234", "1.234.567"
ASCII_DIGITS = "0123456789"
MINUS_SIGNS = "-\u2212\u2012\u2013"  # hyphen-minus, minus, figure dash, en dash


def to_minor_units(
    text: str,
    unit: str = "reais",
    fraction: str = "centavos",
    symbol: str | None = REAIS_SYMBOL,
) -> int:
    """An amount in `unit` as a Brazilian types it → integer minor units; never a float.

    The comma is always the decimal mark; dots in groups of three mark thousands; a single
    dot before one or two digits, with no comma, is a decimal point. So "1.234,56",
    "R$ 1.234,56", "1234,56", "1234.56", "0,5", "1.5" and "1.234.567" are read. `symbol`
    ("R$"; None: no sign at all) may come first, with spaces after it. Refused, each with a
    message saying how to write it: a lone dot before exactly three digits ("1.500":
    thousands or a decimal point?), English grouping ("1,234.56"), groups other than three
    digits ("1.23,45"), more than two decimals ("1,234"), zero, a minus sign, another
    currency's sign, spaces inside the number, and digits other than 0-9.
    """
    typed = text.strip()
    if len(typed) > MAX_REAIS_LENGTH:
        raise ValueError(f"Enter a shorter amount: at most {MAX_REAIS_LENGTH} characters.")
    if any(char.isdigit() and char not in ASCII_DIGITS for char in typed):
        raise ValueError("Type the amount with the digits 0 to 9, like 12,34.")
    if any(minus in typed for minus in MINUS_SIGNS):
        raise ValueError(f"Enter an amount in {unit} without a minus sign, like 12,34.")
    sign, number = SIGN_THEN_NUMBER.fullmatch(typed).groups()
    if sign and number:
        if symbol is None:
            raise ValueError(f"Leave out the currency sign: the amount is in {unit}, like 12,34.")
        if sign.upper() != symbol.upper():
            raise ValueError(
                f"This amount is in {unit}: write {symbol} 12,34 or just 12,34, without {sign}."
            )
    if not NUMBER.fullmatch(number):
        if SPACED_NUMBER.fullmatch(number):
            raise ValueError("Leave out the spaces and separate thousands with dots: 1.234,56.")
        raise ValueError(f"Enter an amount in {unit}, like 12,34.")
    if number[0] in ".,":
        raise ValueError("Write a zero first, like 0,50.")
    units, comma, decimals = number.partition(",")
    if "," in decimals or "." in decimals:
        raise ValueError(
            f"Write amounts the Brazilian way, with dots between thousands and a comma before "
            f"the {fraction}: 1.234,56, not 1,234.56."
        )
    if comma and not decimals:
        raise ValueError(
            f"Write the {fraction} after the comma, like 12,00, or leave the comma out."
        )
    if comma or units.count(".") > 1:  # every dot marks thousands
        if "." in units and not THOUSANDS.fullmatch(units):
            raise ValueError(
                f"Separate thousands with a dot every three digits and the {fraction} with a "
                f"comma, like 1.234.567,89."
            )
    elif "." in units:  # one dot and no comma: a decimal point, unless it may be thousands
        whole, _, after = units.partition(".")
        if THOUSANDS.fullmatch(units):  # one to three digits, the dot, exactly three digits
            other = (
                f", or {whole},{after[:2]} if it is a decimal point"
                if after.endswith("0")
                else f"; the {fraction} go after a comma, at most two, like {whole},{after[:2]}"
            )
            raise ValueError(
                f"Is {units} thousands, or is the dot a decimal point? Write {units},00 if you "
                f"mean thousands{other}."
            )
        if not after:
            raise ValueError(
                f"Write the {fraction} after a comma, like 12,00, or leave the point out."
            )
        units, decimals = whole, after
    if len(decimals) > 2:
        raise ValueError(f"Use at most two decimal places ({fraction}), like 12,34.")
    minor = int(units.replace(".", "")) * 100 + int(decimals.ljust(2, "0"))
    if minor <= 0:
        raise ValueError("Enter an amount greater than zero.")
    return minor


class ReaisField(StringField):
    """Typed as reais, held as integer centavos; the text typed is shown back on errors."""

    UNIT, FRACTION, SYMBOL = "reais", "centavos", REAIS_SYMBOL
    OPTIONAL = False  # True: left empty means "not given" (None), not an error

    def process_formdata(self, valuelist: list[str]) -> None:
        self.data = None
        if valuelist and (valuelist[0].strip() or not self.OPTIONAL):
            self.data = to_minor_units(valuelist[0], self.UNIT, self.FRACTION, self.SYMBOL)

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data is None and not self.process_errors and not self.OPTIONAL:
            raise StopValidation(f"Enter an amount in {self.UNIT}, like 12,34.")

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else format_money(self.data, notation=DECIMAL_COMMA)


class AmountField(ReaisField):
    """An amount in the payment's currency (two decimal places, like the money filter). The
    field does not know that currency when it reads the text, so no sign is taken: "R$" on a
    euro payment would be read as euros."""

    UNIT, FRACTION, SYMBOL = "the payment's currency", "cents", None


class OptionalAmountField(AmountField):
    OPTIONAL = True
