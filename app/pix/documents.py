"""Brazilian tax ids: CPF (people) and CNPJ (companies), including the alphanumeric CNPJ.

Check digits are mod 11: weights 10..2 and 11..2 for CPF; 5,4,3,2,9,8,7,6,5,4,3,2 and
6,5,4,3,2,9,8,7,6,5,4,3,2 for CNPJ; digit = 0 when the remainder is below 2, else 11 - r.
Since July 2026 (IN RFB 2.229/2024) the first 12 CNPJ positions may be `[0-9A-Z]`, each worth
its ASCII code - 48; the two check digits stay numeric. Lowercase is refused, not guessed at.
"""

import re

CPF_PATTERN = re.compile(r"[0-9]{11}")
CNPJ_PATTERN = re.compile(r"[0-9A-Z]{12}[0-9]{2}")
_FORMATTING = re.compile(r"[.\-/ ]")
_CPF_WEIGHTS = (range(10, 1, -1), range(11, 1, -1))
_CNPJ_WEIGHTS = ((5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2), (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2))


def strip_formatting(document: str) -> str:
    """`529.982.247-25` → `52998224725`; `12.ABC.345/01DE-35` → `12ABC34501DE35`."""
    return _FORMATTING.sub("", document)


def formatted(document: str) -> str:
    """`52998224725` → `529.982.247-25`, `12ABC34501DE35` → `12.ABC.345/01DE-35`: a valid
    unformatted CPF or CNPJ as it is printed; any other id comes back as it is."""
    kind = tax_id_kind(document)
    if kind == "CPF":
        return f"{document[:3]}.{document[3:6]}.{document[6:9]}-{document[9:]}"
    if kind == "CNPJ":
        return f"{document[:2]}.{document[2:5]}.{document[5:8]}/{document[8:12]}-{document[12:]}"
    return document


def is_valid_cpf(document: str) -> bool:
    if not CPF_PATTERN.fullmatch(document) or len(set(document)) == 1:
        return False
    return document[9:] == _check_digits(document[:9], _CPF_WEIGHTS)


def is_valid_cnpj(document: str) -> bool:
    if not CNPJ_PATTERN.fullmatch(document) or len(set(document)) == 1:
        return False
    return document[12:] == _check_digits(document[:12], _CNPJ_WEIGHTS)


def tax_id_kind(document: str) -> str | None:
    """The kind of a valid unformatted id, `CPF` or `CNPJ`; None when it is neither."""
    if is_valid_cpf(document):
        return "CPF"
    if is_valid_cnpj(document):
        return "CNPJ"
    return None


def _check_digits(base: str, weight_sets) -> str:
    digits = base
    for weights in weight_sets:
        total = sum((ord(char) - 48) * weight for char, weight in zip(digits, weights, strict=True))
        remainder = total % 11
        digits += str(0 if remainder < 2 else 11 - remainder)
    return digits[len(base) :]
