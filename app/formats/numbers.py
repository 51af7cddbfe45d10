"""Numbers that are not money, as merchants read them: Brazilian notation, the decimal comma
and the dot between thousands (money has its own writer, `formats.money`).

The API keeps its numbers (a rate is a fraction such as 0.6667); only pages write them as text.
"""

from decimal import ROUND_HALF_UP, Decimal

# CLDR's `pt` percent pattern (`#,##0%`, which pt_BR inherits and Babel applies): the sign
# follows the number with no space, as Brazilian software and press write it (66,7%).
PERCENT_SIGN = "%"
_TO_BRAZILIAN_MARKS = str.maketrans(",.", ".,")


def format_percent(rate: float, decimals: int = 1) -> str:
    """0.6667 → `66,7%`; 12.5 → `1.250,0%`. Rounded half up from the rate as written (0.00125
    → `0,13%` at two decimals), not from its binary float, which would round it down."""
    step = Decimal(1).scaleb(-decimals)
    percent = (Decimal(str(rate)) * 100).quantize(step, rounding=ROUND_HALF_UP)
    return f"{percent:,.{decimals}f}".translate(_TO_BRAZILIAN_MARKS) + PERCENT_SIGN
