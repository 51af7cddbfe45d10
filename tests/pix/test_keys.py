"""Pix key rules (`app.pix.keys.validate`), type by type, plus detection and the CNPJ waiver."""

import pytest

from app.pix.keys import (
    CNPJ_WAIVER_NOT_ENABLED,
    MAX_EMAIL_LENGTH,
    NOT_A_KEY,
    PixKeyCheck,
    PixKeyType,
    detect,
    validate,
)

CPF = "52998224725"
CNPJ = "11222333000181"
ALNUM_CNPJ = "12ABC34501DE35"
BAD_CHECKSUM_CNPJ = "11222333000180"
EVP = "123e4567-e89b-42d3-a456-426614174000"


def _valid(key_type: PixKeyType, normalised: str) -> PixKeyCheck:
    return PixKeyCheck(valid=True, type=key_type, normalised=normalised)


def _assert_invalid(check: PixKeyCheck, key_type: PixKeyType | None, *words: str) -> None:
    assert check.valid is False
    assert check.type is key_type
    assert check.normalised is None
    assert check.errors
    message = " ".join(check.errors)
    assert all(word in message for word in words), message


@pytest.mark.parametrize(
    ("key", "normalised"),
    [(CPF, CPF), ("529.982.247-25", CPF), ("  529.982.247-25 ", CPF)],
)
def test_cpf_valid_with_or_without_formatting(key, normalised):
    assert validate(key, PixKeyType.CPF) == _valid(PixKeyType.CPF, normalised)
    assert validate(key) == _valid(PixKeyType.CPF, normalised)


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("52998224724", ["check digits"]),
        ("11111111111", ["check digits"]),  # passes mod 11, refused as all the same digit
        ("5299822472", ["11 digits"]),
        ("5299822472a", ["11 digits"]),
    ],
)
def test_cpf_invalid(key, words):
    _assert_invalid(validate(key, PixKeyType.CPF), PixKeyType.CPF, *words)


@pytest.mark.parametrize(
    ("key", "normalised"),
    [(CNPJ, CNPJ), ("11.222.333/0001-81", CNPJ), (ALNUM_CNPJ, ALNUM_CNPJ)],
)
def test_cnpj_valid_numeric_formatted_and_alphanumeric(key, normalised):
    assert validate(key, PixKeyType.CNPJ) == _valid(PixKeyType.CNPJ, normalised)
    assert validate(key) == _valid(PixKeyType.CNPJ, normalised)


@pytest.mark.parametrize(
    ("key", "words"),
    [
        (BAD_CHECKSUM_CNPJ, ["check digits"]),
        ("12abc34501de35", ["upper case"]),
        ("00000000000000", ["repeat"]),
        ("1122233300018", ["14 characters"]),
        ("12ABC34501DEAB", ["14 characters"]),  # check digits are always numeric
    ],
)
def test_cnpj_invalid(key, words):
    _assert_invalid(validate(key, PixKeyType.CNPJ), PixKeyType.CNPJ, *words)


def test_cnpj_checksum_is_waived_only_when_asked_and_enabled():
    waived = validate(BAD_CHECKSUM_CNPJ, strict_cnpj=False, cnpj_checksum_waiver=True)
    assert waived == _valid(PixKeyType.CNPJ, BAD_CHECKSUM_CNPJ)
    not_asked = validate(BAD_CHECKSUM_CNPJ, cnpj_checksum_waiver=True)
    assert not_asked.errors == ("The CNPJ's check digits are wrong.",)
    not_enabled = validate(BAD_CHECKSUM_CNPJ, strict_cnpj=False)
    _assert_invalid(not_enabled, PixKeyType.CNPJ, "check digits")
    assert CNPJ_WAIVER_NOT_ENABLED in not_enabled.errors


def test_cnpj_waiver_forgives_the_checksum_only():
    for key in ("12abc34501de35", "00000000000000", "1122233300018"):
        check = validate(key, PixKeyType.CNPJ, strict_cnpj=False, cnpj_checksum_waiver=True)
        assert check.valid is False


def test_email_valid_is_lowered():
    expected = _valid(PixKeyType.EMAIL, "fulano.tal@example.com.br")
    assert validate("Fulano.Tal@Example.COM.br", PixKeyType.EMAIL) == expected
    assert validate(" Fulano.Tal@Example.COM.br ") == expected


def test_email_at_most_77_characters():
    local = "a" * 60
    domain_77 = "b" * (MAX_EMAIL_LENGTH - len(local) - len("@.com")) + ".com"
    assert validate(f"{local}@{domain_77}").valid is True
    assert len(f"{local}@{domain_77}") == MAX_EMAIL_LENGTH
    _assert_invalid(validate(f"{local}@b{domain_77}"), PixKeyType.EMAIL, "77")


@pytest.mark.parametrize(
    "key", ["fulano@localhost", "fulano@@example.com", "a b@example.com", "ação@exemplo.com.br"]
)
def test_email_invalid(key):
    _assert_invalid(validate(key, PixKeyType.EMAIL), PixKeyType.EMAIL, "e-mail")


@pytest.mark.parametrize(
    ("key", "normalised"),
    [
        ("+5511987654321", "+5511987654321"),
        ("+55 (11) 98765-4321", "+5511987654321"),
        ("+55 21 3456-7890", "+552134567890"),  # landline: 8 digits
    ],
)
def test_phone_valid(key, normalised):
    assert validate(key, PixKeyType.PHONE) == _valid(PixKeyType.PHONE, normalised)
    assert validate(key) == _valid(PixKeyType.PHONE, normalised)


@pytest.mark.parametrize("key", ["11987654321", "5511987654321", "+1 415 555 2671"])
def test_phone_without_55_is_invalid(key):
    _assert_invalid(validate(key, PixKeyType.PHONE), PixKeyType.PHONE, "+55")


@pytest.mark.parametrize(
    "key",
    [
        "+55119876543",  # 7 digits
        "+55119876543210",  # 10 digits
        "+5511887654321",  # 9 digits not starting with 9
        "+5501987654321",  # area code with a leading 0
        "+5510987654321",  # area code 10
        "+55119876a4321",
        "+55",
    ],
)
def test_phone_wrong_length_or_shape(key):
    _assert_invalid(validate(key, PixKeyType.PHONE), PixKeyType.PHONE, "area code")


def test_evp_valid_and_upper_case_lowered():
    assert validate(EVP, PixKeyType.EVP) == _valid(PixKeyType.EVP, EVP)
    assert validate(EVP.upper()) == _valid(PixKeyType.EVP, EVP)


@pytest.mark.parametrize(
    "key",
    [
        "123e4567-e89b-12d3-a456-426614174000",  # version 1
        "123e4567-e89b-42d3-c456-426614174000",  # variant not RFC 4122
        "123e4567e89b42d3a456426614174000",  # no dashes
    ],
)
def test_evp_invalid(key):
    _assert_invalid(validate(key, PixKeyType.EVP), PixKeyType.EVP, "version 4 UUID")


def test_version_1_uuid_is_detected_as_evp_and_refused():
    _assert_invalid(validate("123e4567-e89b-12d3-a456-426614174000"), PixKeyType.EVP)


@pytest.mark.parametrize(
    ("key", "key_type"),
    [
        (EVP, PixKeyType.EVP),
        ("fulano@example.com", PixKeyType.EMAIL),
        ("+5511987654321", PixKeyType.PHONE),
        ("529.982.247-25", PixKeyType.CPF),
        ("11.222.333/0001-81", PixKeyType.CNPJ),
        ("12abc34501de35", PixKeyType.CNPJ),
        ("+55 a@b.com", PixKeyType.EMAIL),  # @ is checked before +
        ("hello", None),
        ("123456789012", None),
        ("", None),
    ],
)
def test_detection_order(key, key_type):
    assert detect(key) is key_type


def test_eleven_digits_that_are_not_a_cpf_are_an_invalid_cpf():
    _assert_invalid(validate("11987654321"), PixKeyType.CPF, "check digits")


def test_nothing_detected_answers_type_none():
    check = validate("not a key")
    assert check == PixKeyCheck(valid=False, type=None, errors=(NOT_A_KEY,))
    assert "not a CPF, CNPJ, e-mail, phone or random key" in NOT_A_KEY


@pytest.mark.parametrize(
    ("key", "key_type"),
    [
        (CPF, PixKeyType.PHONE),
        (CPF, PixKeyType.CNPJ),
        (CNPJ, PixKeyType.CPF),
        ("fulano@example.com", PixKeyType.EVP),
        (EVP, PixKeyType.EMAIL),
        ("+5511987654321", PixKeyType.CPF),
    ],
)
def test_explicit_type_is_the_only_type_tried(key, key_type):
    _assert_invalid(validate(key, key_type), key_type)


def test_type_may_be_given_as_its_string_value():
    assert validate(CPF, "CPF") == _valid(PixKeyType.CPF, CPF)
