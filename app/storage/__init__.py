"""Document storage for dispute evidence (issue 7): signed addresses first.

The service never receives evidence through the API: it hands out a signed upload address
(a PUT bound to one key, one content type and one exact length, valid 900 seconds), the
client sends the bytes there with no API credentials, and later the service checks what was
stored and hands out a signed view address (valid 5 minutes).

`evidence_storage()` picks the backend named by `EVIDENCE_STORAGE`: `local`, files under
`EVIDENCE_STORAGE_PATH` served by this service behind HMAC-signed addresses
(`app.storage.local`, `app.storage.routes`), or `s3`, an S3-compatible object store whose
presigned PUT binds the type and the length so the store itself refuses anything else
(`app.storage.s3`).
"""

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from flask import Flask, current_app

ALLOWED_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf"})
# How each allowed type's files start; a WebP file is "RIFF", four size bytes, then "WEBP".
MAGIC_PREFIXES = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}
TYPE_HEAD_BYTES = 12  # enough of a file's start to tell its type
MAX_EVIDENCE_BYTES = 10 * 1024 * 1024
UPLOAD_LIFETIME_SECONDS = 900
VIEW_LIFETIME_SECONDS = 300
BACKENDS = ("local", "s3")
MAX_KEY_LENGTH = 512
_SEGMENT = r"[A-Za-z0-9_-][A-Za-z0-9._-]*"
_KEY = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")


class StorageUnavailable(Exception):
    """The storage cannot be written or read right now (503 `service_unavailable`)."""


@dataclass(frozen=True)
class UploadTicket:
    """Where and how the client sends the bytes: exactly these headers, before `expires_in`."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    expires_in: int = UPLOAD_LIFETIME_SECONDS
    method: str = "PUT"


class EvidenceStorage(ABC):
    """What the dispute code needs from a storage backend; nothing here knows about HTTP
    requests or accounts. Keys are relative paths such as `evidence/med_<id>/<evidence id>`
    made of letters, digits, `.`, `_`, `-` and `/`; any other key raises ValueError."""

    def upload_address(
        self,
        key: str,
        content_type: str,
        content_length: int,
        expires_in: int = UPLOAD_LIFETIME_SECONDS,
    ) -> UploadTicket:
        """A signed PUT for exactly this type (one of ALLOWED_TYPES) and this byte length
        (1..MAX_EVIDENCE_BYTES); ValueError for anything else. Every backend checks the same
        way here, then signs its own way."""
        check_key(key)
        check_upload(content_type, content_length)
        return UploadTicket(
            url=self.signed_put_url(key, content_type, content_length, expires_in),
            headers=upload_headers(content_type, content_length),
            expires_in=expires_in,
        )

    @abstractmethod
    def signed_put_url(
        self, key: str, content_type: str, content_length: int, expires_in: int
    ) -> str:
        """The address `upload_address` hands out, for a key and upload already checked."""

    @abstractmethod
    def view_address(self, key: str, expires_in: int = VIEW_LIFETIME_SECONDS) -> str:
        """A signed GET address for the stored object, valid `expires_in` seconds."""

    @abstractmethod
    def stored_size(self, key: str) -> int | None:
        """The stored object's size in bytes, or None when nothing was uploaded.
        StorageUnavailable when the storage cannot be read."""

    @abstractmethod
    def stored_head(self, key: str) -> bytes | None:
        """The stored object's first TYPE_HEAD_BYTES bytes (all of a shorter one), or None
        when nothing was uploaded; for `content_matches_type`. StorageUnavailable when the
        storage cannot be read."""

    @abstractmethod
    def upload_origin(self) -> str:
        """`scheme://host[:port]` of the upload addresses: the dashboard's pages must allow
        their script to send files there (CSP `connect-src`)."""

    @abstractmethod
    def healthy(self) -> bool:
        """Whether uploads can be stored right now."""


def upload_headers(content_type: str, content_length: int) -> dict[str, str]:
    """The headers an upload must send, as signed: exactly this type and this length."""
    return {"Content-Type": content_type, "Content-Length": str(content_length)}


def check_upload(content_type: str, content_length: int) -> None:
    """ValueError unless the type and the size are allowed for evidence."""
    if content_type not in ALLOWED_TYPES:
        raise ValueError(f"Evidence must be one of {', '.join(sorted(ALLOWED_TYPES))}.")
    if (
        not isinstance(content_length, int)
        or isinstance(content_length, bool)
        or not 0 < content_length <= MAX_EVIDENCE_BYTES
    ):
        raise ValueError(f"Evidence must be 1 to {MAX_EVIDENCE_BYTES} bytes long.")


def content_matches_type(head: bytes, content_type: str) -> bool:
    """Whether a file starting with `head` (its first TYPE_HEAD_BYTES bytes) is of this
    allowed type, so a "PDF" that is really HTML or an executable is refused."""
    if content_type == "image/webp":
        return head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    return head.startswith(MAGIC_PREFIXES.get(content_type, ()))


def check_key(key: str) -> str:
    """The key itself when it is a safe relative path; ValueError otherwise (absolute paths,
    `..`, `.` or hidden segments, empty segments, other characters, over 512 characters)."""
    if not isinstance(key, str) or len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise ValueError(
            "A storage key is a relative path of letters, digits, '.', '_', '-' and '/', "
            "with no segment starting with '.'."
        )
    return key


def check_backend_setting(config) -> None:
    """Refuse to start with a storage backend that does not exist or cannot work."""
    backend = config.get("EVIDENCE_STORAGE", "local")
    if backend not in BACKENDS:
        raise RuntimeError(
            f"EVIDENCE_STORAGE={config.get('EVIDENCE_STORAGE')!r} is not supported; "
            f"use one of: {', '.join(BACKENDS)}."
        )
    if backend == "s3":
        from app.storage.s3 import check_s3_settings

        check_s3_settings(config)


def evidence_storage(app: Flask | None = None) -> EvidenceStorage:
    """The configured backend for this app (the current one unless given)."""
    from app.storage.local import LocalEvidenceStorage
    from app.storage.s3 import S3EvidenceStorage

    app = app or current_app
    check_backend_setting(app.config)
    if app.config.get("EVIDENCE_STORAGE", "local") == "s3":
        return S3EvidenceStorage.from_app(app)
    return LocalEvidenceStorage.from_app(app)
