"""Pix identifiers: the txid we bind to a charge, end-to-end ids and return ids.

txid: 26-35 letters and digits, unique per receiver (API Pix `PUT /cob/{txid}`).
End-to-end id: `E` + the payer PSP's ISPB (8) + `yyyyMMddHHmm` in UTC + 11 alphanumerics;
a return (devolução) id has the same shape starting with `D`.
"""

import re
import secrets
import string
import uuid
from datetime import UTC, datetime

TXID_PATTERN = re.compile(r"[a-zA-Z0-9]{26,35}")
END_TO_END_PATTERN = re.compile(r"[ED][0-9A-Z]{8}\d{12}[a-zA-Z0-9]{11}")
_ALPHANUMERIC = string.ascii_letters + string.digits


def new_txid() -> str:
    return uuid.uuid4().hex


def new_end_to_end_id(ispb: str, at: datetime, prefix: str = "E") -> str:
    stamp = at.astimezone(UTC).strftime("%Y%m%d%H%M")
    suffix = "".join(secrets.choice(_ALPHANUMERIC) for _ in range(11))
    return f"{prefix}{ispb}{stamp}{suffix}"


def new_return_id(ispb: str, at: datetime) -> str:
    return new_end_to_end_id(ispb, at, prefix="D")
