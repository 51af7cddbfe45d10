"""Multibanco references, checked against a published reference and the SIBS weights table.

The weights-table computation below is the one the published PHP/JS/Python implementations use,
kept here apart from the module's MOD 97-10 arithmetic so the two can be compared.
"""

import random

import pytest

from app.methods.multibanco import (
    SANDBOX_ENTITY,
    formatted_reference,
    is_valid_reference,
    reference,
    sandbox_reference_id,
)

WEIGHTS = [51, 73, 17, 89, 38, 62, 45, 53, 15, 50, 5, 49, 34, 81, 76, 27, 90, 9, 30, 3]


def _weights_table_check(entity: str, reference_id: str, amount_cents: int) -> str:
    control = entity + reference_id + str(amount_cents).zfill(8)
    total = sum(int(d) * w for d, w in zip(control, WEIGHTS, strict=True))
    return str(98 - total % 97).zfill(2)


def test_published_reference():
    # github.com/Miguel-Frazao/sibs-check-digits-php-python, check_digits.py:
    # entity 90150, id 1231234, 432.11 EUR -> reference 123123451.
    assert reference("90150", "1231234", 43211) == "123123451"
    assert is_valid_reference("90150", "123123451", 43211)


def test_agrees_with_the_weights_table_on_random_inputs():
    rng = random.Random(97)
    amounts = [1, 10**8 - 1] + [rng.randint(1, 10**8 - 1) for _ in range(2000)]
    for amount in amounts:
        entity = f"{rng.randrange(10**5):05d}"
        reference_id = f"{rng.randrange(10**7):07d}"
        built = reference(entity, reference_id, amount)
        assert built == reference_id + _weights_table_check(entity, reference_id, amount)
        assert is_valid_reference(entity, built, amount)


def test_every_single_digit_error_is_detected():
    built = reference(SANDBOX_ENTITY, "7654321", 1999)
    for position, digit in enumerate(built):
        for other in "0123456789":
            if other != digit:
                corrupted = built[:position] + other + built[position + 1 :]
                assert not is_valid_reference(SANDBOX_ENTITY, corrupted, 1999)


def test_a_reference_is_only_valid_for_its_entity_and_amount():
    built = reference(SANDBOX_ENTITY, "7654321", 1999)
    assert is_valid_reference(SANDBOX_ENTITY, formatted_reference(built), 1999)
    assert not is_valid_reference(SANDBOX_ENTITY, built, 2000)
    assert not is_valid_reference("12346", built, 1999)


@pytest.mark.parametrize(
    ("entity", "ref", "amount"),
    [
        ("1234", "123123451", 43211),
        ("90150", "12312345", 43211),
        ("90150", "1231234511", 43211),
        ("90150", "12312345x", 43211),
        ("90150", None, 43211),
        ("90150", "123123451", 0),
        ("90150", "123123451", 10**8),
    ],
)
def test_malformed_input_is_not_valid(entity, ref, amount):
    assert not is_valid_reference(entity, ref, amount)


@pytest.mark.parametrize(
    ("entity", "reference_id", "amount", "field"),
    [
        ("1234", "1231234", 100, "entity"),
        ("123456", "1231234", 100, "entity"),
        ("1234a", "1231234", 100, "entity"),
        ("90150", "123123", 100, "id"),
        ("90150", "12312345", 100, "id"),
        ("90150", "123123x", 100, "id"),
        ("90150", "1231234", 0, "amount"),
        ("90150", "1231234", -1, "amount"),
        ("90150", "1231234", 10**8, "amount"),
    ],
)
def test_reference_refuses_bad_input(entity, reference_id, amount, field):
    with pytest.raises(ValueError, match=field):
        reference(entity, reference_id, amount)


def test_formatted_reference():
    assert formatted_reference("123123451") == "123 123 451"
    with pytest.raises(ValueError):
        formatted_reference("12312345")


def test_sandbox_reference_id_is_stable_per_reference():
    first = sandbox_reference_id("chg_123")
    assert first == sandbox_reference_id("chg_123")
    assert len(first) == 7
    assert first.isdigit()
    assert first != sandbox_reference_id("chg_124")
    assert len(SANDBOX_ENTITY) == 5
    assert is_valid_reference(SANDBOX_ENTITY, reference(SANDBOX_ENTITY, first, 500), 500)
