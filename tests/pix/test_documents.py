"""CPF and CNPJ check digits, including the alphanumeric CNPJ issued since July 2026."""

import pytest

from app.pix.documents import (
    formatted,
    is_valid_cnpj,
    is_valid_cpf,
    strip_formatting,
    tax_id_kind,
)


@pytest.mark.parametrize("cpf", ["52998224725", "11144477735"])
def test_valid_cpfs(cpf):
    assert is_valid_cpf(cpf) and tax_id_kind(cpf) == "CPF"


@pytest.mark.parametrize(
    "cpf", ["52998224724", "11111111111", "5299822472", "529982247250", "5299822472a"]
)
def test_invalid_cpfs(cpf):
    assert not is_valid_cpf(cpf)


@pytest.mark.parametrize("cnpj", ["11222333000181", "12ABC34501DE35"])
def test_valid_cnpjs(cnpj):
    assert is_valid_cnpj(cnpj) and tax_id_kind(cnpj) == "CNPJ"


@pytest.mark.parametrize(
    "cnpj",
    [
        "11222333000180",  # wrong check digit
        "12ABC34501DE36",
        "12abc34501de35",  # lowercase is refused, not uppercased
        "12ÁBC34501DE35",
        "12ABC34501DEA5",  # check digits are numeric
        "00000000000000",
        "1122233300018",
    ],
)
def test_invalid_cnpjs(cnpj):
    assert not is_valid_cnpj(cnpj)
    assert tax_id_kind(cnpj) is None


def test_formatting_is_stripped():
    assert strip_formatting("529.982.247-25") == "52998224725"
    assert strip_formatting("12.ABC.345/01DE-35") == "12ABC34501DE35"


@pytest.mark.parametrize(
    ("document", "printed"),
    [
        ("52998224725", "529.982.247-25"),
        ("11222333000181", "11.222.333/0001-81"),
        ("12ABC34501DE35", "12.ABC.345/01DE-35"),  # alphanumeric CNPJ
        ("52998224724", "52998224724"),  # not a valid CPF: left as it is
        ("PT123456789", "PT123456789"),  # another country's tax id
    ],
)
def test_formatted_prints_a_cpf_or_cnpj_as_written_and_round_trips(document, printed):
    assert formatted(document) == printed
    assert strip_formatting(printed) == document
