"""Money, rates and documents as the page's reader writes them."""

import pytest

from app.templating import money

NBSP = "\u00a0"


@pytest.mark.parametrize(
    ("locale", "amount", "currency", "shown"),
    [
        ("pt_BR", 123456, "BRL", f"R${NBSP}1.234,56"),
        ("pt_BR", 5, "BRL", f"R${NBSP}0,05"),
        ("pt_BR", 0, "BRL", f"R${NBSP}0,00"),
        ("pt_BR", -100_000_000, "BRL", f"-R${NBSP}1.000.000,00"),
        ("pt_BR", 100, "EUR", f"€{NBSP}1,00"),
        ("pt_BR", 100, "USDT", f"USDT{NBSP}1,00"),
        ("pt_PT", 123456, "EUR", f"1{NBSP}234,56{NBSP}€"),
        ("pt_PT", 99, "EUR", f"0,99{NBSP}€"),
        ("en", 123456, "BRL", "R$1,234.56"),
        ("en", -5, "EUR", "-€0.05"),
        ("en", 100, "USDT", f"USDT{NBSP}1.00"),
    ],
)
def test_money_is_written_as_the_readers_locale_writes_it(app, locale, amount, currency, shown):
    """From integer minor units, with no float anywhere, in CLDR's notation for the page's
    locale; the no-break space keeps a symbol on its number's line."""
    with app.test_request_context(headers={"Accept-Language": locale.replace("_", "-")}):
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
def test_a_rate_is_a_percentage_with_a_decimal_comma_in_portuguese(app, rate, shown):
    """Is 2/3 shown as 66,7% (CLDR pt's `#,##0%`) to a Brazilian reader, never as 66.7%?"""
    with app.test_request_context(headers={"Accept-Language": "pt-BR"}):
        assert app.jinja_env.filters["percent"](rate) == shown


def test_a_rate_is_a_percentage_with_a_decimal_point_in_english(app):
    with app.test_request_context(headers={"Accept-Language": "en"}):
        assert app.jinja_env.filters["percent"](2 / 3) == "66.7%"


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
