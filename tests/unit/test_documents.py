"""CPF and CNPJ check digits, including the alphanumeric CNPJ issued since July 2026."""

import pytest

from app.pix.documents import is_valid_cnpj, is_valid_cpf, strip_formatting, tax_id_kind


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
