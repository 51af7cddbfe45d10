"""Form fields the forms of several domains share: an amount typed as text and held as integer
minor units (payments, payouts, disputes), the longest Pix key (refunds, payouts), and
WTForms' own refusals as msgids of the app's catalog (so they are translated with the rest)."""

import re
from decimal import Decimal

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
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
# The words the messages name the amount's unit and its fraction with, translated when shown.
REAIS, CENTAVOS = _l("reais"), _l("centavos")
PAYMENT_CURRENCY, CENTS = _l("the payment's currency"), _l("cents")
MINUS_SIGNS = "-\u2212\u2012\u2013"  # hyphen-minus, minus, figure dash, en dash
PERCENT = re.compile(r"([0-9]{1,3})(?:[.,]([0-9]{1,2}))?\s*%?")  # "2", "2,5", "2.50 %"
# WTForms' wording, for the validators' `message`.
REQUIRED = _l("This field is required.")
TOO_LONG = _l("Field cannot be longer than %(max)d characters.")
LENGTH_BETWEEN = _l("Field must be between %(min)d and %(max)d characters long.")
NOT_ONE_OF = _l("Invalid value, must be one of: %(values)s.")


def to_minor_units(
    text: str,
    unit: str = REAIS,
    fraction: str = CENTAVOS,
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
        raise ValueError(
            _("Enter a shorter amount: at most %(length)s characters.", length=MAX_REAIS_LENGTH)
        )
    if any(char.isdigit() and char not in ASCII_DIGITS for char in typed):
        raise ValueError(_("Type the amount with the digits 0 to 9, like 12,34."))
    if any(minus in typed for minus in MINUS_SIGNS):
        raise ValueError(
            _("Enter an amount in %(unit)s without a minus sign, like 12,34.", unit=unit)
        )
    sign, number = SIGN_THEN_NUMBER.fullmatch(typed).groups()
    if sign and number:
        if symbol is None:
            raise ValueError(
                _("Leave out the currency sign: the amount is in %(unit)s, like 12,34.", unit=unit)
            )
        if sign.upper() != symbol.upper():
            raise ValueError(
                _(
                    "This amount is in %(unit)s: write %(symbol)s 12,34 or just 12,34, "
                    "without %(sign)s.",
                    unit=unit,
                    symbol=symbol,
                    sign=sign,
                )
            )
    if not NUMBER.fullmatch(number):
        if SPACED_NUMBER.fullmatch(number):
            raise ValueError(_("Leave out the spaces and separate thousands with dots: 1.234,56."))
        raise ValueError(_("Enter an amount in %(unit)s, like 12,34.", unit=unit))
    if number[0] in ".,":
        raise ValueError(_("Write a zero first, like 0,50."))
    units, comma, decimals = number.partition(",")
    if "," in decimals or "." in decimals:
        raise ValueError(
            _(
                "Write amounts the Brazilian way, with dots between thousands and a comma before "
                "the %(fraction)s: 1.234,56, not 1,234.56.",
                fraction=fraction,
            )
        )
    if comma and not decimals:
        raise ValueError(
            _(
                "Write the %(fraction)s after the comma, like 12,00, or leave the comma out.",
                fraction=fraction,
            )
        )
    if comma or units.count(".") > 1:  # every dot marks thousands
        if "." in units and not THOUSANDS.fullmatch(units):
            raise ValueError(
                _(
                    "Separate thousands with a dot every three digits and the %(fraction)s "
                    "with a comma, like 1.234.567,89.",
                    fraction=fraction,
                )
            )
    elif "." in units:  # one dot and no comma: a decimal point, unless it may be thousands
        whole, _point, after = units.partition(".")
        if THOUSANDS.fullmatch(units):  # one to three digits, the dot, exactly three digits
            if after.endswith("0"):
                raise ValueError(
                    _(
                        "Is %(number)s thousands, or is the dot a decimal point? Write "
                        "%(number)s,00 if you mean thousands, or %(whole)s,%(decimals)s if it "
                        "is a decimal point.",
                        number=units,
                        whole=whole,
                        decimals=after[:2],
                    )
                )
            raise ValueError(
                _(
                    "Is %(number)s thousands, or is the dot a decimal point? Write "
                    "%(number)s,00 if you mean thousands; the %(fraction)s go after a comma, "
                    "at most two, like %(whole)s,%(decimals)s.",
                    number=units,
                    fraction=fraction,
                    whole=whole,
                    decimals=after[:2],
                )
            )
        if not after:
            raise ValueError(
                _(
                    "Write the %(fraction)s after a comma, like 12,00, or leave the point out.",
                    fraction=fraction,
                )
            )
        units, decimals = whole, after
    if len(decimals) > 2:
        raise ValueError(
            _("Use at most two decimal places (%(fraction)s), like 12,34.", fraction=fraction)
        )
    minor = int(units.replace(".", "")) * 100 + int(decimals.ljust(2, "0"))
    if minor <= 0:
        raise ValueError(_("Enter an amount greater than zero."))
    return minor


def to_percent(text: str) -> int | Decimal:
    """A percentage as a Brazilian types it ("2,5", "2,50 %", "2.5") → its number of percent,
    exact; the rules on its size are the service's (`app.pix.due`)."""
    match = PERCENT.fullmatch(text.strip())
    if match is None:
        raise ValueError(_("Enter a percentage with at most two decimal places, like 2,5."))
    whole, decimals = match.groups()
    return Decimal(f"{whole}.{decimals}") if decimals and int(decimals) else int(whole)


class ReaisField(StringField):
    """Typed as reais, held as integer centavos; the text typed is shown back on errors."""

    UNIT, FRACTION, SYMBOL = REAIS, CENTAVOS, REAIS_SYMBOL
    OPTIONAL = False  # True: left empty means "not given" (None), not an error

    def process_formdata(self, valuelist: list[str]) -> None:
        self.data = None
        if valuelist and (valuelist[0].strip() or not self.OPTIONAL):
            self.data = to_minor_units(valuelist[0], self.UNIT, self.FRACTION, self.SYMBOL)

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data is None and not self.process_errors and not self.OPTIONAL:
            raise StopValidation(_("Enter an amount in %(unit)s, like 12,34.", unit=self.UNIT))

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else format_money(self.data, notation=DECIMAL_COMMA)


class AmountField(ReaisField):
    """An amount in the payment's currency (two decimal places, like the money filter). The
    field does not know that currency when it reads the text, so no sign is taken: "R$" on a
    euro payment would be read as euros."""

    UNIT, FRACTION, SYMBOL = PAYMENT_CURRENCY, CENTS, None


class OptionalAmountField(AmountField):
    OPTIONAL = True
