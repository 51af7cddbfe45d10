"""Pix BR Code: the EMV QRCPS-MPM payload behind a Pix QR code and its copy-and-paste text.

Built and checked per the Banco Central do Brasil Pix initiation manual: every field is
ID (2 digits) + length (2 digits) + value; `63` closes the payload with a CRC-16/CCITT-FALSE
over everything before it, `6304` included. Dynamic codes carry a location (`26`/`25`) whose
payload is authoritative; the 26-35 character API txid lives there, never in `62`/`05`.
"""

import binascii
import re
import unicodedata
from dataclasses import dataclass

from app.formats.money import DECIMAL_POINT, format_money

GUI = "br.gov.bcb.pix"
MERCHANT_CATEGORY_CODE = "0000"
CURRENCY_BRL = "986"
COUNTRY = "BR"
DYNAMIC_TXID = "***"
MAX_NAME = 25
MAX_CITY = 15
MAX_ACCOUNT_INFO = 99
MAX_KEY_OR_LOCATION = 77
MAX_AMOUNT_LENGTH = 13
MAX_AMOUNT = 10 ** (MAX_AMOUNT_LENGTH - 1) - 1  # centavos: the 13 characters of 9999999999.99
_STATIC_TXID = re.compile(r"[A-Za-z0-9]{1,25}")
_AMOUNT = re.compile(r"\d{1,10}\.\d{2}")


class BrCodeError(ValueError):
    """A payload (or the data for one) that breaks the BR Code rules; the message says which."""


@dataclass(frozen=True)
class BrCode:
    """The fields of a parsed payload that a payer's app acts on."""

    single_use: bool
    pix_key: str | None
    location: str | None
    description: str | None
    amount_cents: int | None
    merchant_name: str
    merchant_city: str
    txid: str

    @property
    def is_dynamic(self) -> bool:
        return self.location is not None


def crc16(data: str) -> str:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection) as 4 uppercase hex digits:
    `binascii.crc_hqx` is that CRC, computed in C."""
    return f"{binascii.crc_hqx(data.encode('ascii'), 0xFFFF):04X}"


def dynamic_payload(
    *, location: str, merchant_name: str, merchant_city: str, amount_cents: int | None = None
) -> str:
    """A single-use code pointing at `location` (host and path, no scheme)."""
    if "://" in location:
        raise BrCodeError("the location goes without its scheme (no https://)")
    return _payload(
        single_use=True,
        account_info=_field("00", GUI)
        + _field("25", _bounded(location, MAX_KEY_OR_LOCATION, "location")),
        amount_cents=amount_cents,
        merchant_name=merchant_name,
        merchant_city=merchant_city,
        txid=DYNAMIC_TXID,
    )


def static_payload(
    *,
    pix_key: str,
    merchant_name: str,
    merchant_city: str,
    amount_cents: int | None = None,
    txid: str = DYNAMIC_TXID,
    description: str | None = None,
) -> str:
    """A reusable code for a Pix key, optionally with a fixed amount and a short txid."""
    _check_static_txid(txid)
    account_info = _field("00", GUI) + _field(
        "01", _bounded(pix_key, MAX_KEY_OR_LOCATION, "Pix key")
    )
    if description:
        account_info += _field("02", ascii_text(description))
    return _payload(
        single_use=False,
        account_info=account_info,
        amount_cents=amount_cents,
        merchant_name=merchant_name,
        merchant_city=merchant_city,
        txid=txid,
    )


def ascii_text(text: str) -> str:
    """Accents stripped and anything outside printable ASCII dropped (lengths count characters)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if " " <= c <= "~").strip()


def format_amount(amount_cents: int) -> str:
    if amount_cents <= 0:
        raise BrCodeError("the amount must be positive")
    return _bounded(format_money(amount_cents, notation=DECIMAL_POINT), MAX_AMOUNT_LENGTH, "amount")


def _payload(
    *,
    single_use: bool,
    account_info: str,
    amount_cents: int | None,
    merchant_name: str,
    merchant_city: str,
    txid: str,
) -> str:
    name = ascii_text(merchant_name)[:MAX_NAME].strip()
    city = ascii_text(merchant_city)[:MAX_CITY].strip()
    if not name or not city:
        raise BrCodeError("merchant name and city are required")
    body = _field("00", "01")
    if single_use:
        body += _field("01", "12")
    body += _field("26", _bounded(account_info, MAX_ACCOUNT_INFO, "merchant account information"))
    body += _field("52", MERCHANT_CATEGORY_CODE) + _field("53", CURRENCY_BRL)
    if amount_cents is not None:
        body += _field("54", format_amount(amount_cents))
    body += _field("58", COUNTRY) + _field("59", name) + _field("60", city)
    body += _field("62", _field("05", txid))
    body += "6304"
    return body + crc16(body)


def _field(field_id: str, value: str) -> str:
    if len(value) > 99:
        raise BrCodeError(f"field {field_id} is longer than 99 characters")
    return f"{field_id}{len(value):02d}{value}"


def _check_static_txid(txid: str) -> None:
    if txid != DYNAMIC_TXID and not _STATIC_TXID.fullmatch(txid):
        raise BrCodeError("a static txid is 1 to 25 letters and digits, or ***")


def _bounded(value: str, limit: int, what: str) -> str:
    if not value or len(value) > limit:
        raise BrCodeError(f"the {what} must be 1 to {limit} characters")
    return value


def parse(payload: str) -> BrCode:
    """Check every length, the required fields and the CRC; return what the payload says."""
    if not payload.isascii():
        raise BrCodeError("a BR Code is ASCII only")
    if len(payload) < 8 or payload[-8:-4] != "6304":
        raise BrCodeError("the payload must end with the CRC field 63")
    if crc16(payload[:-4]) != payload[-4:].upper():
        raise BrCodeError("the CRC does not match")
    fields = _fields(payload[:-8], "payload")
    if next(iter(fields), None) != "00" or fields["00"] != "01":
        raise BrCodeError("field 00 must come first and be 01")
    if fields.get("01", "11") not in {"11", "12"}:
        raise BrCodeError("field 01 must be 11 or 12")
    for field_id, expected in (
        ("52", MERCHANT_CATEGORY_CODE),
        ("53", CURRENCY_BRL),
        ("58", COUNTRY),
    ):
        if fields.get(field_id) != expected:
            raise BrCodeError(f"field {field_id} must be {expected}")
    account = _account_info(fields.get("26"))
    amount = fields.get("54")
    if amount is not None and (len(amount) > MAX_AMOUNT_LENGTH or not _AMOUNT.fullmatch(amount)):
        raise BrCodeError("field 54 must be an amount with two decimals")
    name, city = fields.get("59", ""), fields.get("60", "")
    if not 1 <= len(name) <= MAX_NAME or not 1 <= len(city) <= MAX_CITY:
        raise BrCodeError("fields 59 (name, up to 25) and 60 (city, up to 15) are required")
    txid = _fields(fields.get("62", ""), "field 62").get("05")
    if txid is None:
        raise BrCodeError("field 62 must carry the txid in 05")
    if account["25"] is not None and txid != DYNAMIC_TXID:
        raise BrCodeError("a dynamic code carries *** as its txid")
    _check_static_txid(txid)
    return BrCode(
        single_use=fields.get("01") == "12",
        pix_key=account["01"],
        location=account["25"],
        description=account["02"],
        amount_cents=int(amount.replace(".", "")) if amount else None,
        merchant_name=name,
        merchant_city=city,
        txid=txid,
    )


def _account_info(value: str | None) -> dict:
    if value is None:
        raise BrCodeError("field 26 (Pix account information) is required")
    sub = _fields(value, "field 26")
    if sub.get("00", "").lower() != GUI:
        raise BrCodeError(f"field 26 must name the GUI {GUI}")
    key, location = sub.get("01"), sub.get("25")
    if (key is None) == (location is None):
        raise BrCodeError("field 26 carries exactly one of a Pix key (01) and a location (25)")
    for found in (key, location):
        if found is not None and len(found) > MAX_KEY_OR_LOCATION:
            raise BrCodeError("a Pix key or location is at most 77 characters")
    return {"01": key, "25": location, "02": sub.get("02")}


def _fields(data: str, where: str) -> dict[str, str]:
    """Split ID-length-value fields, refusing bad lengths and repeated IDs."""
    fields: dict[str, str] = {}
    position = 0
    while position < len(data):
        header = data[position : position + 4]
        if len(header) < 4 or not header.isdigit():
            raise BrCodeError(f"{where}: malformed field at position {position}")
        field_id, length = header[:2], int(header[2:])
        value = data[position + 4 : position + 4 + length]
        if len(value) != length:
            raise BrCodeError(f"{where}: field {field_id} is shorter than its length")
        if field_id in fields:
            raise BrCodeError(f"{where}: field {field_id} appears twice")
        fields[field_id] = value
        position += 4 + length
    return fields
