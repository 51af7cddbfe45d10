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


@pytest.mark.parametrize(
    ("rate", "shown"),
    [
        (2 / 3, "66,7%"),
        (0.3333, "33,3%"),
        (0, "0,0%"),
        (1, "100,0%"),
        (0.00125, "0,1%"),
        (12.5, "1.250,0%"),
    ],
)
def test_a_rate_is_a_percentage_with_a_decimal_comma(app, rate, shown):
    """Is 2/3 shown as 66,7% (CLDR pt's `#,##0%`), never as 66.7%?"""
    assert app.jinja_env.filters["percent"](rate) == shown


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("52998224725", "529.982.247-25"),
        ("11222333000181", "11.222.333/0001-81"),
        ("12ABC34501DE35", "12.ABC.345/01DE-35"),  # alphanumeric CNPJ
        ("529.982.247-25", "529.982.247-25"),  # stored formatted: as it is
        ("***.982.247-**", "***.982.247-**"),  # stored masked: never unmasked
        ("52998224724", "52998224724"),  # wrong check digits: not a CPF to punctuate
        ("12abc34501de35", "12abc34501de35"),  # lowercase is not a CNPJ
    ],
)
def test_a_tax_id_is_punctuated_only_when_it_is_a_cpf_or_cnpj(app, stored, shown):
    assert app.jinja_env.filters["tax_id"](stored) == shown
