"""Boleto bancário (FEBRABAN "bloqueto de cobrança"): the barcode and the digitable line.

The 44-digit barcode is bank (3) + currency (1, "9" = real) + general check digit (1) + due
factor (4) + amount in centavos (10) + the bank's free field (25). Its general check digit is
modulo 11 over the other 43 digits (weights 2..9 from the right; results 0, 10 and 11 become 1,
so a boleto whose digit is 1 misses some typing errors: that is the standard, not a bug here).

The 47-digit digitable line that payers type re-orders the same digits into five fields; the
first three each carry a modulo 10 digit (weights 2, 1 from the right, two-digit products
summed digit by digit), the fourth is the general check digit and the fifth factor + amount.

The due factor counts days from 1997-10-07. Four digits ran out on 2025-02-21 (9999), so
FEBRABAN restarts it at 1000 on 2025-02-22 and it cycles through 1000..9999 from then on, so a
factor alone no longer names one date. Dates before 2000-07-03 (factor 1000) cannot be expressed.

A boleto has one due date, a calendar day in São Paulo. The barcode carries its factor, and
`boletoExpiresAt` is the instant that day ends there (`end_of_due_date`). Pages and the slip
show the day read back from that instant (`due_date`): the midnight itself, shown as a local
time, would name the next day.
"""

import hashlib
import re
from datetime import UTC, date, datetime, time, timedelta

from app.business_days import SAO_PAULO
from app.methods import is_digits

BASE_DATE = date(1997, 10, 7)
MIN_FACTOR = 1000
FACTOR_CYCLE = 9000  # 1000..9999
BARCODE_LENGTH = 44
LINE_LENGTH = 47
FREE_FIELD_LENGTH = 25
MAX_AMOUNT_CENTS = 10**10 - 1
_LINE_SEPARATORS = re.compile(r"[ .]")


def _mod10(digits: str) -> str:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        product = int(digit) * (2 if position % 2 == 0 else 1)
        total += product // 10 + product % 10
    return str((10 - total % 10) % 10)


def _mod11(digits: str) -> str:
    total = sum(int(digit) * (2 + position % 8) for position, digit in enumerate(reversed(digits)))
    dv = 11 - total % 11
    return "1" if dv in (0, 10, 11) else str(dv)


def _general_dv(code: str) -> str:
    """The barcode's check digit: modulo 11 over every digit but itself (position 5)."""
    return _mod11(code[:4] + code[5:])


def due_factor(due: date) -> int:
    """FEBRABAN "fator de vencimento" for `due`, with the 2025-02-22 restart at 1000."""
    days = (due - BASE_DATE).days
    if days < MIN_FACTOR:
        raise ValueError(f"due date {due} is before {BASE_DATE} + 1000 days: no due factor")
    return (days - MIN_FACTOR) % FACTOR_CYCLE + MIN_FACTOR


def end_of_due_date(due: date) -> datetime:
    """`boletoExpiresAt` of a boleto due on `due`: the next midnight in São Paulo, in UTC.

    A boleto can be paid at any time of its due date, so the first late instant is the end of
    that day where the date is defined, whatever time zone the payer or a server is in.
    """
    return datetime.combine(due + timedelta(days=1), time.min, tzinfo=SAO_PAULO).astimezone(UTC)


def due_date(expires_at: datetime) -> date:
    """The São Paulo date whose end is `expires_at` (the inverse of `end_of_due_date`).

    The date of the last payable moment, just before `expires_at`: an expiry at midnight names
    the day that midnight closes, not the one it opens (taken in UTC, so that it also holds on
    the days summer time skipped midnight).
    """
    return (expires_at - timedelta(microseconds=1)).astimezone(SAO_PAULO).date()


def formatted_due_date(expires_at: datetime) -> str:
    """The due date as payers read it on a boleto, `dd/mm/aaaa`: a day, with no time of day."""
    return due_date(expires_at).strftime("%d/%m/%Y")


def barcode(
    bank_code: str, amount_cents: int, due: date, free_field: str, currency_code: str = "9"
) -> str:
    """The 44-digit barcode for a boleto; `free_field` is the bank's own 25 digits."""
    if not is_digits(bank_code, 3):
        raise ValueError("bank code must be 3 digits")
    if not is_digits(currency_code, 1):
        raise ValueError("currency code must be 1 digit")
    if not is_digits(free_field, FREE_FIELD_LENGTH):
        raise ValueError(f"free field must be {FREE_FIELD_LENGTH} digits")
    if not 0 < amount_cents <= MAX_AMOUNT_CENTS:
        raise ValueError(f"amount must be 1..{MAX_AMOUNT_CENTS} centavos")
    body = f"{bank_code}{currency_code}{due_factor(due):04d}{amount_cents:010d}{free_field}"
    return body[:4] + _mod11(body) + body[4:]


def is_valid_barcode(code: object) -> bool:
    """Whether `code` is 44 digits whose general check digit is right."""
    return is_digits(code, BARCODE_LENGTH) and code[4] == _general_dv(code)


def digitable_line(barcode: str) -> str:
    """The 47-digit line (digits only) that carries the same data as a valid barcode."""
    if not is_valid_barcode(barcode):
        raise ValueError("not a valid 44-digit boleto barcode")
    fields = (barcode[0:4] + barcode[19:24], barcode[24:34], barcode[34:44])
    return "".join(field + _mod10(field) for field in fields) + barcode[4] + barcode[5:19]


def _line_digits(line: str) -> str:
    """The line without the dots and spaces of its printed layout."""
    return _LINE_SEPARATORS.sub("", line) if isinstance(line, str) else line


def _unchecked_barcode(digits: str) -> str:
    return digits[0:4] + digits[32] + digits[33:47] + digits[4:9] + digits[10:20] + digits[21:31]


def is_valid_line(line: str) -> bool:
    """Whether `line` (digits only or printed layout) has all four check digits right."""
    digits = _line_digits(line)
    if not is_digits(digits, LINE_LENGTH):
        return False
    fields_ok = all(
        digits[end] == _mod10(digits[start:end]) for start, end in ((0, 9), (10, 20), (21, 31))
    )
    return fields_ok and is_valid_barcode(_unchecked_barcode(digits))


def barcode_from_line(line: str) -> str:
    """The barcode behind a digitable line (digits only or printed layout), checked."""
    if not is_valid_line(line):
        raise ValueError("not a valid 47-digit boleto line")
    return _unchecked_barcode(_line_digits(line))


def formatted_line(line: str) -> str:
    """The printed layout `AAAAA.AAAAA BBBBB.BBBBBB CCCCC.CCCCCC D EEEEEEEEEEEEEE`."""
    if not is_digits(line, LINE_LENGTH):
        raise ValueError(f"line must be {LINE_LENGTH} digits")
    return (
        f"{line[0:5]}.{line[5:10]} {line[10:15]}.{line[15:21]} "
        f"{line[21:26]}.{line[26:32]} {line[32]} {line[33:47]}"
    )


def sandbox_free_field(reference: str) -> str:
    """25 digits derived from `reference`, so retrying the same charge gives the same boleto."""
    digest = hashlib.sha256(reference.encode()).hexdigest()
    return f"{int(digest, 16) % 10**FREE_FIELD_LENGTH:0{FREE_FIELD_LENGTH}d}"
