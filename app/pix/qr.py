"""QR code images of BR Codes (segno), as PNG.

Rendering costs a few milliseconds, so images are served from their own URL (which clients
and browsers may cache: a code never changes) and the most recent ones are kept in memory.
"""

import io
from functools import lru_cache

import segno


@lru_cache(maxsize=512)
def png(br_code: str) -> bytes:
    """A scannable PNG: error correction M, 4-module quiet zone, 6 px per module."""
    image = io.BytesIO()
    segno.make_qr(br_code, error="m", boost_error=False).save(image, kind="png", scale=6, border=4)
    return image.getvalue()
