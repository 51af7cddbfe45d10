"""Numbers that are not money, as the reader's locale writes them (money has its own writer,
`formats.money`).

The API keeps its numbers (a rate is a fraction such as 0.6667); only pages write them as text.
"""

from decimal import ROUND_HALF_UP, Decimal

from babel.numbers import format_percent as babel_percent


def format_percent(rate: float, locale: str = "pt_BR", decimals: int = 1) -> str:
    """0.6667 → `66,7%` in pt_BR, `66.7%` in en; 12.5 → `1.250,0%`. Rounded half up from the
    rate as written (0.00125 → `0,13%` at two decimals), not from its binary float, which
    would round it down; Babel then only writes the marks CLDR gives the locale."""
    fraction = Decimal(str(rate)).quantize(Decimal(1).scaleb(-decimals - 2), ROUND_HALF_UP)
    pattern = "#,##0." + "0" * decimals + "%" if decimals else "#,##0%"
    return babel_percent(fraction, pattern, locale=locale)
