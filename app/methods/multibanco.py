"""Multibanco payment references (SIBS, Portugal): entity + 9-digit reference + amount.

The payer keys in the 5-digit entity, the 9-digit reference and the amount at an ATM or in home
banking. The reference is our 7-digit id followed by two check digits over entity + id +
amount, so a mistyped reference, or the right one with another amount, is refused at the ATM.

The check digits are ISO 7064 MOD 97-10 over the 20 digits entity (5) + id (7) + amount in
cents (8): 98 - (those digits followed by "00") mod 97. The weights table the published
implementations use (51, 73, 17, ..., 30, 3) is just 10^21..10^2 mod 97, i.e. the same number.
"""

import hashlib

from app.methods import is_digits

SANDBOX_ENTITY = "12345"
REFERENCE_LENGTH = 9
ID_LENGTH = 7
MAX_AMOUNT_CENTS = 10**8 - 1  # 999 999.99 EUR: the 8 digits the check covers


def _check_digits(entity: str, reference_id: str, amount_cents: int) -> str:
    if not is_digits(entity, 5):
        raise ValueError("entity must be 5 digits")
    if not is_digits(reference_id, ID_LENGTH):
        raise ValueError(f"reference id must be {ID_LENGTH} digits")
    if not 0 < amount_cents <= MAX_AMOUNT_CENTS:
        raise ValueError(f"amount must be 1..{MAX_AMOUNT_CENTS} cents")
    digits = f"{entity}{reference_id}{amount_cents:08d}"
    return f"{98 - int(digits) * 100 % 97:02d}"


def reference(entity: str, sub_entity_and_id: str, amount_cents: int) -> str:
    """The 9-digit reference: the 7-digit id plus its SIBS check digits for entity and amount."""
    return sub_entity_and_id + _check_digits(entity, sub_entity_and_id, amount_cents)


def is_valid_reference(entity: str, reference: str, amount_cents: int) -> bool:
    """Whether `reference` (spaces allowed) pays `amount_cents` to `entity`."""
    digits = reference.replace(" ", "") if isinstance(reference, str) else reference
    if not is_digits(digits, REFERENCE_LENGTH):
        return False
    try:
        return digits[ID_LENGTH:] == _check_digits(entity, digits[:ID_LENGTH], amount_cents)
    except ValueError:
        return False


def formatted_reference(reference: str) -> str:
    """The reference as printed on vouchers and ATMs: `123 456 789`."""
    if not is_digits(reference, REFERENCE_LENGTH):
        raise ValueError(f"reference must be {REFERENCE_LENGTH} digits")
    return f"{reference[0:3]} {reference[3:6]} {reference[6:9]}"


def sandbox_reference_id(reference: str) -> str:
    """7 digits derived from `reference`, so retrying the same charge gives the same reference."""
    digest = hashlib.sha256(reference.encode()).hexdigest()
    return f"{int(digest, 16) % 10**ID_LENGTH:0{ID_LENGTH}d}"
