"""Money as text, from integer minor units: the one place that turns cents into digits, so
pages, PDFs, e-mails and wire fields cannot drift apart (integer arithmetic: no float ever
touches an amount).

Each `Notation` is a way of writing an amount that some reader relies on today: merchants
read Brazilian notation, a Pix BR Code and a crypto quote need a decimal point, a form field
shows back what a merchant types.
"""

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from babel.numbers import format_currency, get_currency_symbol

CURRENCY_SYMBOLS = {"BRL": "R$", "EUR": "€", "USD": "US$"}
NO_BREAK_SPACE = "\u00a0"


@dataclass(frozen=True)
class Notation:
    """The mark before the cents, the mark between thousands ("" for none), and whether a
    currency is named by its symbol (R$) or by its code (BRL)."""

    decimal_mark: str
    thousands_mark: str = ""
    symbol: bool = False


BRAZILIAN = Notation(decimal_mark=",", thousands_mark=".", symbol=True)  # R$ 1.234,56
DECIMAL_POINT = Notation(decimal_mark=".")  # 1234.56, or BRL 1234.56 with a currency
DECIMAL_COMMA = Notation(decimal_mark=",")  # 1234,56: an amount as a merchant types it


class Amount(NamedTuple):
    """An amount a message names (`errors.ApiError.values`): the API writes it `BRL 12.34`,
    a page as its reader's locale does (`templating.refusal_text`)."""

    minor_units: int
    currency: str

    def __str__(self) -> str:
        return format_money(self.minor_units, self.currency, DECIMAL_POINT)


def format_money(
    amount_minor: int, currency: str | None = None, notation: Notation = BRAZILIAN
) -> str:
    """123456, "BRL" → `R$ 1.234,56`; a currency without a symbol is named by its code
    (`USDT 1,00`), and without a currency only the number is written."""
    sign = "-" if amount_minor < 0 else ""
    units, cents = divmod(abs(amount_minor), 100)
    grouped = f"{units:,}".replace(",", notation.thousands_mark)
    number = f"{grouped}{notation.decimal_mark}{cents:02d}"
    if currency is None:
        return f"{sign}{number}"
    name = CURRENCY_SYMBOLS.get(currency, currency) if notation.symbol else currency
    return f"{sign}{name} {number}"


def localized_money(amount_minor: int, currency: str, locale: str) -> str:
    """123456, "BRL" as the locale writes it (CLDR through Babel): `R$ 1.234,56` in pt_BR,
    `1 234,56 €` in pt_PT, `R$1,234.56` in en, with no-break spaces so a narrow cell never
    parts the symbol from its number. A currency CLDR has no symbol for keeps a space after
    its code (`USDT 1,00`), as `format_money` writes it."""
    value = Decimal(amount_minor).scaleb(-2)
    text = format_currency(value, currency, locale=locale, currency_digits=False)
    if get_currency_symbol(currency, locale) == currency:
        text = re.sub(rf"(?<={re.escape(currency)})(?=[-\d])", NO_BREAK_SPACE, text)
    return text
