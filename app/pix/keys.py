"""Pix keys (DICT formats): which type a key is, whether it is well formed, and its stored form.

`validate` is the single place these rules live. `POST /v1/withdrawals/validate-pix-key`
answers with its result, and payout creation is meant to call it on `pixKey`/`pixKeyType`, so
the pre-flight check and the payout can never disagree. It is pure (no database, no request):
callers pass in what they know about the account, here whether support has enabled the CNPJ
checksum waiver.

An invalid key is a result (`valid=False` with reasons), not an exception: the validation
route answers it with 200, and a payout can turn it into whatever error it needs.
"""

import enum
import re
from dataclasses import dataclass

from email_validator import EmailNotValidError, validate_email

from app.marks import translatable
from app.pix.documents import (
    CNPJ_PATTERN,
    CPF_PATTERN,
    is_valid_cnpj,
    is_valid_cpf,
    strip_formatting,
)

MAX_EMAIL_LENGTH = 77
IDNA_PREFIX = "xn--"  # an internationalised domain label in its ASCII form
_UUID_SHAPE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_UUID_V4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_PHONE_FORMATTING = re.compile(r"[\s\-()]")
_BRAZIL_PHONE = re.compile(r"\+55(?P<area>[1-9][0-9])(?P<number>9[0-9]{8}|[0-9]{8})")
_CNPJ_SHAPE = re.compile(r"[0-9A-Za-z]{14}")

NOT_A_KEY = translatable("The key is not a CPF, CNPJ, e-mail, phone or random key (EVP).")
CNPJ_CHECKSUM_WRONG = translatable("The CNPJ's check digits are wrong.")
CNPJ_WAIVER_NOT_ENABLED = translatable(
    "strictCnpj=false was sent, but the CNPJ checksum waiver is not enabled for this account; "
    "ask support to enable it."
)


class PixKeyType(enum.StrEnum):
    CPF = "CPF"
    CNPJ = "CNPJ"
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    EVP = "EVP"


@dataclass(frozen=True)
class PixKeyCheck:
    """The verdict on one key: `normalised` is set only when valid, `errors` only when not.

    `type` is the type given or detected; None only when nothing could be detected.
    """

    valid: bool
    type: PixKeyType | None
    normalised: str | None = None
    errors: tuple[str, ...] = ()


def validate(
    key: str,
    key_type: PixKeyType | str | None = None,
    *,
    strict_cnpj: bool = True,
    cnpj_checksum_waiver: bool = False,
) -> PixKeyCheck:
    """Check `key` against `key_type`, or against the type detected from it when None.

    `strict_cnpj=False` is the caller asking to accept a CNPJ whose only fault is its check
    digits (the contract's `strictCnpj=false`); it takes effect only when
    `cnpj_checksum_waiver` (the account's `Account.cnpj_checksum_waiver`, set by support) is
    true. Asked for without the waiver, the key stays invalid and the errors say why.
    Surrounding whitespace is ignored; nothing else is forgiven beyond each type's formatting.
    A `key_type` that is not a `PixKeyType` value raises ValueError (callers validate it first).
    """
    key = key.strip()
    key_type = PixKeyType(key_type) if key_type is not None else detect(key)
    match key_type:
        case None:
            return PixKeyCheck(valid=False, type=None, errors=(NOT_A_KEY,))
        case PixKeyType.CPF:
            return _check_cpf(key)
        case PixKeyType.CNPJ:
            return _check_cnpj(key, strict=strict_cnpj, waiver=cnpj_checksum_waiver)
        case PixKeyType.EMAIL:
            return _check_email(key)
        case PixKeyType.PHONE:
            return _check_phone(key)
        case PixKeyType.EVP:
            return _check_evp(key)


def detect(key: str) -> PixKeyType | None:
    """The type a key looks like, first match wins: EVP (UUID shape), EMAIL (has @), PHONE
    (starts with +), CPF (11 digits once formatting is stripped), CNPJ (14 letters or digits
    once formatting is stripped). An 11-digit string is always a CPF, valid or not."""
    if _UUID_SHAPE.fullmatch(key):
        return PixKeyType.EVP
    if "@" in key:
        return PixKeyType.EMAIL
    if key.startswith("+"):
        return PixKeyType.PHONE
    document = strip_formatting(key)
    if CPF_PATTERN.fullmatch(document):
        return PixKeyType.CPF
    if _CNPJ_SHAPE.fullmatch(document):
        return PixKeyType.CNPJ
    return None


def _valid(key_type: PixKeyType, normalised: str) -> PixKeyCheck:
    return PixKeyCheck(valid=True, type=key_type, normalised=normalised)


def _invalid(key_type: PixKeyType, *errors: str) -> PixKeyCheck:
    return PixKeyCheck(valid=False, type=key_type, errors=errors)


def _check_cpf(key: str) -> PixKeyCheck:
    document = strip_formatting(key)
    if not CPF_PATTERN.fullmatch(document):
        return _invalid(
            PixKeyType.CPF, translatable("A CPF key has 11 digits (dots and a dash are allowed).")
        )
    if not is_valid_cpf(document):
        return _invalid(PixKeyType.CPF, translatable("The CPF's check digits are wrong."))
    return _valid(PixKeyType.CPF, document)


def _check_cnpj(key: str, *, strict: bool, waiver: bool) -> PixKeyCheck:
    document = strip_formatting(key)
    if not CNPJ_PATTERN.fullmatch(document):
        if CNPJ_PATTERN.fullmatch(document.upper()):
            return _invalid(
                PixKeyType.CNPJ, translatable("A CNPJ key's letters must be upper case.")
            )
        return _invalid(
            PixKeyType.CNPJ,
            translatable(
                "A CNPJ key has 14 characters: 12 digits or upper-case letters, "
                "then 2 check digits."
            ),
        )
    if len(set(document)) == 1:
        return _invalid(
            PixKeyType.CNPJ, translatable("A CNPJ cannot repeat one character 14 times.")
        )
    if is_valid_cnpj(document) or (not strict and waiver):
        return _valid(PixKeyType.CNPJ, document)
    if not strict:
        return _invalid(PixKeyType.CNPJ, CNPJ_CHECKSUM_WRONG, CNPJ_WAIVER_NOT_ENABLED)
    return _invalid(PixKeyType.CNPJ, CNPJ_CHECKSUM_WRONG)


def _check_email(key: str) -> PixKeyCheck:
    """ASCII only, with no IDNA (`xn--`) domain label: either could spell a look-alike of
    another address (`example.com` with a Cyrillic U+0430 for its a), and a payout would go
    to it."""
    if not key.isascii():
        return _invalid(
            PixKeyType.EMAIL,
            translatable("An e-mail key is ASCII only (no accents or letters of other alphabets)."),
        )
    domain = key.rpartition("@")[2]
    if any(label.lower().startswith(IDNA_PREFIX) for label in domain.split(".")):
        return _invalid(
            PixKeyType.EMAIL,
            translatable("An e-mail key's domain may not be internationalised (no xn-- labels)."),
        )
    try:
        address = validate_email(key, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError as error:
        return _invalid(PixKeyType.EMAIL, f"Invalid e-mail address: {error}")
    normalised = address.normalized.lower()
    if len(normalised) > MAX_EMAIL_LENGTH:
        return _invalid(
            PixKeyType.EMAIL, f"An e-mail key has at most {MAX_EMAIL_LENGTH} characters."
        )
    return _valid(PixKeyType.EMAIL, normalised)


def _check_phone(key: str) -> PixKeyCheck:
    number = _PHONE_FORMATTING.sub("", key)
    if not number.startswith("+55"):
        return _invalid(
            PixKeyType.PHONE,
            translatable("A phone key must start with +55 (Brazil), for example +5511987654321."),
        )
    match = _BRAZIL_PHONE.fullmatch(number)
    if match is None or int(match["area"]) < 11:
        return _invalid(
            PixKeyType.PHONE,
            translatable(
                "A phone key is +55, a 2-digit area code (11-99) and an 8-digit number or a "
                "9-digit mobile number starting with 9, for example +5511987654321."
            ),
        )
    return _valid(PixKeyType.PHONE, number)


def _check_evp(key: str) -> PixKeyCheck:
    lowered = key.lower()
    if not _UUID_V4.fullmatch(lowered):
        return _invalid(
            PixKeyType.EVP,
            translatable(
                "A random key (EVP) is a version 4 UUID, "
                "for example 123e4567-e89b-42d3-a456-426614174000."
            ),
        )
    return _valid(PixKeyType.EVP, lowered)
