"""Evidence as files on this machine, behind addresses signed by this service.

Object `evidence/med_1/ev_2` lives at `<EVIDENCE_STORAGE_PATH>/evidence/med_1/ev_2`; its
content type (the one its upload address was signed for) sits beside it in the hidden
sidecar `.ev_2.type`. No key segment may start with a dot, so sidecars and the temporary
`.upload-*` files can never be mistaken for, or overwritten as, an object.

Addresses are `{PUBLIC_BASE_URL}/storage/<key>?expires=…&type=…&length=…&signature=…`,
signed (app.storage.signing) with a key derived from SECRET_KEY for this purpose only, so
the raw SECRET_KEY never signs anything here and another use of it can never produce a
valid storage signature.
"""

import contextlib
import hashlib
import hmac
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from flask import Flask

from app.storage import (
    ALLOWED_TYPES,
    TYPE_HEAD_BYTES,
    VIEW_LIFETIME_SECONDS,
    EvidenceStorage,
    StorageUnavailable,
    check_key,
)
from app.storage.signing import Grant, verify

SIGNING_LABEL = b"evidence-storage"
ROUTE_PREFIX = "/storage/"
_CHUNK = 64 * 1024


def signing_secret(secret_key: str | bytes) -> bytes:
    """The storage's own HMAC key: HMAC-SHA256(SECRET_KEY, "evidence-storage")."""
    raw = secret_key.encode() if isinstance(secret_key, str) else secret_key
    return hmac.new(raw, SIGNING_LABEL, hashlib.sha256).digest()


class LocalEvidenceStorage(EvidenceStorage):
    def __init__(self, root: Path | str, secret: bytes, base_url: str, clock=time.time):
        self.root = Path(root)
        self.secret = secret
        self.base_url = base_url.rstrip("/")
        self.clock = clock

    @staticmethod
    def create_default_directory(app: Flask) -> None:
        """At start-up, create the default directory under the instance path; a configured
        EVIDENCE_STORAGE_PATH must exist already (it is usually a mounted volume)."""
        if not app.config.get("EVIDENCE_STORAGE_PATH"):
            (Path(app.instance_path) / "evidence").mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_app(cls, app: Flask) -> "LocalEvidenceStorage":
        root = app.config.get("EVIDENCE_STORAGE_PATH") or Path(app.instance_path) / "evidence"
        return cls(
            root=root,
            secret=signing_secret(app.config["SECRET_KEY"]),
            base_url=app.config["PUBLIC_BASE_URL"],
        )

    # The EvidenceStorage interface

    def signed_put_url(
        self, key: str, content_type: str, content_length: int, expires_in: int
    ) -> str:
        grant = Grant(
            method="PUT",
            key=key,
            expires_at=self.now() + expires_in,
            content_type=content_type,
            content_length=content_length,
        )
        return self.address(grant)

    def view_address(self, key: str, expires_in: int = VIEW_LIFETIME_SECONDS) -> str:
        check_key(key)
        return self.address(Grant(method="GET", key=key, expires_at=self.now() + expires_in))

    def stored_size(self, key: str) -> int | None:
        path = self.path(key)
        try:
            return path.stat().st_size if path.is_file() else None
        except OSError as error:
            raise StorageUnavailable("The evidence storage cannot be read.") from error

    def stored_head(self, key: str) -> bytes | None:
        path = self.path(key)
        try:
            if not path.is_file():
                return None
            with path.open("rb") as stored:
                return stored.read(TYPE_HEAD_BYTES)
        except OSError as error:
            raise StorageUnavailable("The evidence storage cannot be read.") from error

    def upload_origin(self) -> str:
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    def healthy(self) -> bool:
        """The directory exists and takes a file. It is never created here: a volume that
        failed to mount must read as down, not fill the machine's own disk."""
        try:
            with tempfile.TemporaryFile(dir=self.root, prefix=".health-"):
                pass
        except OSError:
            return False
        return True

    # What the /storage routes need

    def now(self) -> int:
        return int(self.clock())

    def address(self, grant: Grant) -> str:
        query = urlencode(grant.params(self.secret))
        return f"{self.base_url}{ROUTE_PREFIX}{quote(grant.key, safe='/')}?{query}"

    def verify(self, method: str, key: str, params: dict[str, str]) -> Grant:
        """The grant behind a request's address (SignatureRefused when there is none)."""
        return verify(self.secret, method, key, params, self.now())

    def path(self, key: str) -> Path:
        path = self.root / check_key(key)
        root = self.root.resolve()
        if not path.resolve().is_relative_to(root) or path.resolve() == root:
            raise ValueError("A storage key must stay inside the storage directory.")
        return path

    def content_type(self, key: str) -> str:
        """The type the object was uploaded as (application/octet-stream if unknown)."""
        try:
            stored = _sidecar(self.path(key)).read_text().strip()
        except OSError:
            return "application/octet-stream"
        return stored if stored in ALLOWED_TYPES else "application/octet-stream"

    def save(self, key: str, content_type: str, chunks: Iterable[bytes]) -> int:
        """Write the chunks as the object `key`, once, and return the size.

        The bytes go to a temporary file beside the target, which becomes the object (a hard
        link, which fails if the object exists) only once every chunk was written: a reader
        never sees half a file, and evidence once stored can never be replaced, even with
        the same signed address (ObjectExists). If `chunks` raises (a body of the wrong
        length), nothing is stored and the error propagates. OSError becomes
        StorageUnavailable."""
        path = self.path(key)
        try:
            if not self.root.is_dir():
                raise FileNotFoundError(self.root)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        except OSError as error:
            raise StorageUnavailable("The evidence storage cannot be written.") from error
        try:
            size = 0
            with os.fdopen(fd, "wb") as temp:
                for chunk in chunks:
                    temp.write(chunk)
                    size += len(chunk)
                temp.flush()
                os.fsync(temp.fileno())
            _write_atomically(_sidecar(path), content_type.encode())
            os.link(temp_name, path)
        except FileExistsError as error:
            raise ObjectExists(f"{key} is already stored.") from error
        except OSError as error:
            raise StorageUnavailable("The evidence storage cannot be written.") from error
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
        return size


class ObjectExists(Exception):
    """Evidence is written once: the object is already stored."""


def _sidecar(path: Path) -> Path:
    return path.with_name(f".{path.name}.type")


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
        os.replace(temp_name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
