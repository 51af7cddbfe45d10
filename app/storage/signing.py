"""Signed addresses: whoever holds one may PUT exactly the file it was issued for (that
content type and byte length) or GET it, until it expires, with no API credentials.

The signature is an HMAC-SHA256 over the method, the object key, the content type, the
length and the expiry, so changing any of them (or the method) invalidates it. Signatures are
compared in constant time; an expired address is refused even when its signature is right.
"""

import hashlib
import hmac
import json
from dataclasses import dataclass

SIGNATURE_PARAM = "signature"


class SignatureRefused(Exception):
    """The address was tampered with, issued for another request, or has expired."""


@dataclass(frozen=True)
class Grant:
    """What a signed address allows: one method on one object, until `expires_at` (unix)."""

    method: str
    key: str
    expires_at: int
    content_type: str = ""
    content_length: int | None = None

    def message(self) -> bytes:
        """The signed text: a JSON array, so no field can spill into the next."""
        fields = [
            self.method.upper(),
            self.key,
            self.content_type,
            self.content_length,
            self.expires_at,
        ]
        return json.dumps(fields, separators=(",", ":")).encode()

    def params(self, secret: bytes) -> dict[str, str]:
        """The query parameters of the signed address."""
        params = {"expires": str(self.expires_at)}
        if self.content_type:
            params["type"] = self.content_type
        if self.content_length is not None:
            params["length"] = str(self.content_length)
        return params | {SIGNATURE_PARAM: sign(secret, self)}


def sign(secret: bytes, grant: Grant) -> str:
    return hmac.new(secret, grant.message(), hashlib.sha256).hexdigest()


def verify(secret: bytes, method: str, key: str, params: dict[str, str], now: int) -> Grant:
    """The grant behind a request's address, or SignatureRefused saying why not."""
    try:
        grant = Grant(
            method=method,
            key=key,
            expires_at=int(params["expires"]),
            content_type=params.get("type", ""),
            content_length=int(params["length"]) if "length" in params else None,
        )
        presented = params[SIGNATURE_PARAM]
    except (KeyError, ValueError) as error:
        raise SignatureRefused("The address is incomplete or malformed.") from error
    # As bytes: compare_digest raises on a str with non-ASCII characters, which anyone can send.
    if not hmac.compare_digest(sign(secret, grant).encode(), presented.encode()):
        raise SignatureRefused("The address's signature does not match this request.")
    if now >= grant.expires_at:
        raise SignatureRefused("The address has expired.")
    return grant
