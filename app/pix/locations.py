"""Where our dynamic BR Codes point: `<PUBLIC_BASE_URL host and path>/v1/qr/<22 characters>`.

A BR Code holds its location (no scheme) in at most 77 characters. The 128-bit location id
as 32 hex digits under `/v1/pix/locations/` left 27 characters for the host; written in
base62 (22 characters) under `/v1/qr/` it leaves 48, so real host names fit. Start-up
refuses a PUBLIC_BASE_URL that would not (`validate_public_base_url`), so no charge ever fails
for it. The stored id stays the 32 hex digits: codes issued with the older address keep working.
"""

import string
from urllib.parse import urlsplit

from app.pix.brcode import MAX_KEY_OR_LOCATION

LOCATION_PATH = "/v1/qr/"
COMPACT_ID_LENGTH = 22  # 62**22 > 2**128
_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_ID_LIMIT = 1 << 128


def compact_id(location_id: str) -> str:
    """The 32-hex-digit location id in base62, always 22 characters."""
    number = int(location_id, 16)
    digits = []
    for _ in range(COMPACT_ID_LENGTH):
        number, digit = divmod(number, len(_BASE62))
        digits.append(_BASE62[digit])
    return "".join(reversed(digits))


def location_id(compact: str) -> str | None:
    """The stored location id that `compact` spells, or None when it spells none."""
    if len(compact) != COMPACT_ID_LENGTH or not all(c in _BASE62 for c in compact):
        return None
    number = 0
    for character in compact:
        number = number * len(_BASE62) + _BASE62.index(character)
    return f"{number:032x}" if number < _ID_LIMIT else None


def location(public_base_url: str, location_id: str) -> str:
    """The BR Code location of `location_id`: host and path, no scheme."""
    return _prefix(public_base_url) + compact_id(location_id)


def location_problem(public_base_url: str) -> str | None:
    """Why no BR Code could carry a location on `public_base_url`, or None."""
    prefix = _prefix(public_base_url)
    if not (prefix.isascii() and prefix.isprintable()):
        return "PUBLIC_BASE_URL must be printable ASCII (write an international host in punycode)."
    room = MAX_KEY_OR_LOCATION - COMPACT_ID_LENGTH - len(LOCATION_PATH)
    host_and_path = prefix.removesuffix(LOCATION_PATH)
    if len(host_and_path) > room:
        return (
            f"PUBLIC_BASE_URL is too long for Pix codes: a BR Code's location "
            f"({host_and_path}{LOCATION_PATH}<{COMPACT_ID_LENGTH}-character id>) holds at most "
            f"{MAX_KEY_OR_LOCATION} characters, so the host and path may have {room}, "
            f"not {len(host_and_path)}."
        )
    return None


def validate_public_base_url(config: dict) -> None:
    """The start-up check (`app.settings_checks`) of `location_problem`."""
    problem = location_problem(config["PUBLIC_BASE_URL"])
    if problem:
        raise RuntimeError(problem)


def _prefix(public_base_url: str) -> str:
    parts = urlsplit(public_base_url)
    return f"{parts.netloc}{parts.path.rstrip('/')}{LOCATION_PATH}"
