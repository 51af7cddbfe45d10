"""Money and dates as a Brazilian merchant reads them."""

import pytest

from app.templating import money


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        (123456, "BRL", "R$ 1.234,56"),
        (5, "BRL", "R$ 0,05"),
        (0, "BRL", "R$ 0,00"),
        (-100_000_000, "BRL", "-R$ 1.000.000,00"),
        (100, "EUR", "€ 1,00"),
        (100, "USDT", "USDT 1,00"),
    ],
)
def test_money_is_formatted_from_integer_minor_units(amount, currency, shown):
    """Is R$ 1.234,56 shown for 123456 centavos, with no float rounding anywhere?"""
    assert money(amount, currency) == shown
