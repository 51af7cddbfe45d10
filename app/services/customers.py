"""Customer fields sent with a charge or payment: checked once, stored normalised.

Each failure names the field (`error.param`) so a client can point at it.
"""

import re

from email_validator import EmailNotValidError, validate_email

from app.errors import InvalidRequest
from app.pix.documents import strip_formatting, tax_id_kind

E164 = re.compile(r"\+[1-9][0-9]{7,14}")


def tax_id(value: str | None, param: str) -> str | None:
    """A CPF or CNPJ (the alphanumeric CNPJ included) with valid check digits, unformatted."""
    if value is None:
        return None
    document = strip_formatting(value.strip())
    if tax_id_kind(document) is None:
        raise InvalidRequest(
            "Send an 11-digit CPF or a 14-character CNPJ with valid check digits "
            "(letters in upper case).",
            param=param,
        )
    return document


def email(value: str | None, param: str) -> str | None:
    if value is None:
        return None
    try:
        return validate_email(value, check_deliverability=False).normalized
    except EmailNotValidError as error:
        raise InvalidRequest(f"Invalid e-mail address: {error}", param=param) from error


def phone(value: str | None, param: str) -> str | None:
    if value is None:
        return None
    if not E164.fullmatch(value):
        raise InvalidRequest(
            "Send the phone number in E.164 form, for example +5511987654321.", param=param
        )
    return value
