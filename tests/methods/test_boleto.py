"""Boleto barcode and digitable line, checked against published boletos and our own arithmetic.

The check digits are recomputed here by separate helpers rather than trusted from the module.
"""

import random
from datetime import UTC, date, datetime, timedelta

import pytest

from app.methods.boleto import (
    barcode,
    barcode_from_line,
    digitable_line,
    due_date,
    due_factor,
    end_of_due_date,
    formatted_due_date,
    formatted_line,
    is_valid_barcode,
    is_valid_line,
    sandbox_free_field,
)

# (bank, due date, amount in centavos, barcode, printed line) from the test suite of pyboleto
# (github.com/eduardocereto/pyboleto, tests/test_banco_{real,caixa,bradesco,banrisul}.py):
# boletos of real banks, built by an independent implementation.
PUBLISHED = [
    (
        "356",
        date(2011, 2, 5),
        35500,
        "35698486900000355000531570585390000000000123",
        "35690.53154 70585.390001 00000.001230 8 48690000035500",
    ),
    (
        "104",
        date(2012, 7, 8),
        295295,
        "10491538800002952958019525086156587000000414",
        "10498.01952 25086.156582 70000.004146 1 53880000295295",
    ),
    (
        "237",
        date(2011, 2, 5),
        828000,
        "23794486900008280000278060000212552500392320",
        "23790.27804 60000.212559 25003.923205 4 48690000828000",
    ),
    (
        "041",
        date(2000, 7, 4),
        55000,
        "04198100100000550002111029000150228325634059",
        "04192.11107 29000.150226 83256.340593 8 10010000055000",
    ),
]
# Whose general check digit is not 1: there every single-digit error changes the digit.
STRICT_BARCODES = [code for _, _, _, code, _ in PUBLISHED if code[4] != "1"]
FREE_FIELD = "1234567890123456789012345"


def _mod11(digits: str) -> int:
    weights = [2, 3, 4, 5, 6, 7, 8, 9] * 6
    total = sum(int(d) * w for d, w in zip(digits[::-1], weights, strict=False))
    rest = total % 11
    return 1 if rest in (0, 1, 10) else 11 - rest


def _mod10(digits: str) -> int:
    total = 0
    for i, d in enumerate(digits[::-1]):
        doubled = int(d) * 2 if i % 2 == 0 else int(d)
        total += doubled - 9 if doubled > 9 else doubled
    return -total % 10


def _check_barcode(code: str) -> bool:
    return len(code) == 44 and int(code[4]) == _mod11(code[:4] + code[5:])


def _check_line(line: str, code: str) -> bool:
    return (
        len(line) == 47
        and int(line[9]) == _mod10(line[0:9])
        and int(line[20]) == _mod10(line[10:20])
        and int(line[31]) == _mod10(line[21:31])
        and line[0:4] + line[4:9] == code[0:4] + code[19:24]
        and line[10:20] == code[24:34]
        and line[21:31] == code[34:44]
        and line[32] == code[4]
        and line[33:] == code[5:19]
    )


def _single_digit_errors(digits: str):
    for position, digit in enumerate(digits):
        for other in "0123456789":
            if other != digit:
                yield digits[:position] + other + digits[position + 1 :]


@pytest.mark.parametrize(
    ("due", "factor"),
    [
        (date(2000, 7, 3), 1000),  # 1000 days after the 1997-10-07 base
        (date(2000, 7, 4), 1001),  # boleto_bancario's docs; pyboleto's Banrisul boleto
        (date(2012, 7, 8), 5388),  # pyboleto's Caixa boleto above
        (date(2025, 2, 20), 9998),
        (date(2025, 2, 21), 9999),  # last day of the first cycle
        (date(2025, 2, 22), 1000),  # FEBRABAN's restart (cobregratis/boletophp#62)
        (date(2025, 2, 23), 1001),
        (date(2026, 3, 15), 1386),  # 386 days after the restart
        (date(2049, 10, 13), 9999),  # 1997-10-07 + 18999 days: the second cycle ends
        (date(2049, 10, 14), 1000),
    ],
)
def test_due_factor(due, factor):
    assert due_factor(due) == factor


def test_due_factor_refuses_dates_before_factor_1000():
    with pytest.raises(ValueError):
        due_factor(date(2000, 7, 2))


@pytest.mark.parametrize(("bank", "due", "amount", "code", "printed"), PUBLISHED)
def test_reproduces_published_boletos(bank, due, amount, code, printed):
    built = barcode(bank, amount, due, code[19:])
    assert built == code
    line = digitable_line(built)
    assert line == printed.replace(".", "").replace(" ", "")
    assert formatted_line(line) == printed
    assert barcode_from_line(line) == code
    assert barcode_from_line(printed) == code
    assert is_valid_barcode(code)
    assert is_valid_line(line)
    assert is_valid_line(printed)


def test_a_2026_boleto_carries_the_restarted_factor():
    code = barcode("001", 123456, date(2026, 3, 15), FREE_FIELD)
    assert code[5:9] == "1386"
    assert code[9:19] == "0000123456"
    assert _check_barcode(code)


def test_random_boletos_match_the_independent_check_and_round_trip():
    rng = random.Random(20250222)
    for _ in range(500):
        bank = f"{rng.randrange(1000):03d}"
        amount = rng.randint(1, 10**10 - 1)
        due = date(2000, 7, 3) + timedelta(days=rng.randrange(20000))
        free_field = "".join(rng.choice("0123456789") for _ in range(25))
        code = barcode(bank, amount, due, free_field)
        line = digitable_line(code)
        assert len(code) == 44
        assert len(line) == 47
        assert _check_barcode(code)
        assert _check_line(line, code)
        assert barcode_from_line(line) == code
        assert barcode_from_line(formatted_line(line)) == code


@pytest.mark.parametrize("code", STRICT_BARCODES)
def test_every_single_digit_error_is_detected(code):
    for corrupted in _single_digit_errors(code):
        assert not is_valid_barcode(corrupted)
    line = digitable_line(code)
    for corrupted in _single_digit_errors(line):
        assert not is_valid_line(corrupted)
        assert not is_valid_line(formatted_line(corrupted))


def test_check_digit_one_covers_three_remainders_as_the_standard_says():
    code = PUBLISHED[1][3]  # general check digit 1
    outcomes = {is_valid_barcode(c) for c in _single_digit_errors(code)}
    for corrupted in _single_digit_errors(code):
        assert is_valid_barcode(corrupted) == _check_barcode(corrupted)
    assert outcomes == {True, False}


@pytest.mark.parametrize(
    "value", [None, 123, "", "3569848690000035500053157058539000000000012", "3" * 45, "x" * 44]
)
def test_malformed_codes_are_not_valid(value):
    assert not is_valid_barcode(value)
    assert not is_valid_line(value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"bank_code": "34"}, "bank"),
        ({"bank_code": "3a1"}, "bank"),
        ({"bank_code": "1234"}, "bank"),
        ({"currency_code": "99"}, "currency"),
        ({"free_field": FREE_FIELD[:-1]}, "free field"),
        ({"free_field": FREE_FIELD + "6"}, "free field"),
        ({"free_field": FREE_FIELD[:-1] + "x"}, "free field"),
        ({"amount_cents": 0}, "amount"),
        ({"amount_cents": -100}, "amount"),
        ({"amount_cents": 10**10}, "amount"),
        ({"due": date(1999, 12, 31)}, "due date"),
    ],
)
def test_barcode_refuses_bad_input(kwargs, field):
    args = {
        "bank_code": "001",
        "amount_cents": 100,
        "due": date(2026, 3, 15),
        "free_field": FREE_FIELD,
    } | kwargs
    with pytest.raises(ValueError, match=field):
        barcode(**args)


def test_conversions_refuse_invalid_codes():
    code = PUBLISHED[0][3]
    line = digitable_line(code)
    with pytest.raises(ValueError):
        digitable_line(code[:4] + "0" + code[5:])
    with pytest.raises(ValueError):
        barcode_from_line(line[:-1] + str((int(line[-1]) + 1) % 10))
    with pytest.raises(ValueError):
        formatted_line(line[:-1])


def test_sandbox_free_field_is_stable_per_reference():
    first = sandbox_free_field("chg_123")
    assert first == sandbox_free_field("chg_123")
    assert len(first) == 25
    assert first.isdigit()
    assert first != sandbox_free_field("chg_124")
    assert is_valid_barcode(barcode("001", 100, date(2026, 3, 15), first))


@pytest.mark.parametrize(
    ("due", "expires_at"),
    [
        (date(2026, 11, 30), datetime(2026, 12, 1, 3, 0, tzinfo=UTC)),  # issue 18's boleto
        (date(2025, 2, 21), datetime(2025, 2, 22, 3, 0, tzinfo=UTC)),  # factor 9999
        (date(2018, 11, 3), datetime(2018, 11, 4, 3, 0, tzinfo=UTC)),  # 00:00 became 01:00
        (date(2018, 11, 4), datetime(2018, 11, 5, 2, 0, tzinfo=UTC)),  # summer time (-02)
    ],
)
def test_expiry_is_the_end_of_the_due_date_in_sao_paulo(due, expires_at):
    assert end_of_due_date(due) == expires_at
    assert due_date(expires_at) == due
    assert formatted_due_date(expires_at) == due.strftime("%d/%m/%Y")


def test_the_due_date_of_an_expiry_is_the_sao_paulo_day_it_falls_in_or_closes():
    assert due_date(datetime(2026, 12, 1, 2, 59, 59, tzinfo=UTC)) == date(2026, 11, 30)
    assert due_date(datetime(2026, 12, 1, 3, 0, 1, tzinfo=UTC)) == date(2026, 12, 1)
    assert formatted_due_date(datetime(2026, 12, 1, 3, 0, tzinfo=UTC)) == "30/11/2026"
