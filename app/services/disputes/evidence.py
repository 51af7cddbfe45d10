"""A case's evidence files in the evidence storage (`app.storage`): a pending item with the
signed address its bytes go to, its confirmation once the storage holds exactly the declared
bytes, and the confirmed items with signed view addresses. Whether evidence may still be
attached is asked of `allowances.attachability`."""

import re
import unicodedata
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import sqlalchemy as sa

from app.errors import Conflict, InvalidRequest, NotFound, ServiceUnavailable
from app.extensions import db
from app.marks import translatable
from app.models import DisputeEvidence, EvidenceUploader, KeyMode
from app.models.base import utcnow
from app.services.disputes.allowances import attachability
from app.services.disputes.listing import get_case
from app.storage import (
    ALLOWED_TYPES,
    MAX_EVIDENCE_BYTES,
    StorageUnavailable,
    UploadTicket,
    content_matches_type,
    evidence_storage,
)

EVIDENCE_PREFIX = "medev_"
MAX_FILE_NAME = 255
_SAFE_FILE_NAME = re.compile(r"[^/\\]+")
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
T = TypeVar("T")


def create_upload(
    account_id: str,
    mode: KeyMode,
    case_id: str,
    *,
    file_name: str,
    file_size: int,
    mime_type: str,
    uploaded_by: EvidenceUploader = EvidenceUploader.MERCHANT,
) -> tuple[DisputeEvidence, UploadTicket]:
    """A pending evidence item and the signed address its bytes go to (900 seconds)."""
    case = get_case(account_id, mode, case_id)
    attachability(case).require()
    name = _checked_file_name(file_name)
    if mime_type not in ALLOWED_TYPES:
        raise InvalidRequest(
            translatable("mime_type is one of %(types)s."),
            values={"types": ", ".join(sorted(ALLOWED_TYPES))},
            param="mime_type",
        )
    if not isinstance(file_size, int) or isinstance(file_size, bool):
        raise InvalidRequest("file_size is an integer number of bytes.", param="file_size")
    if not 0 < file_size <= MAX_EVIDENCE_BYTES:
        raise InvalidRequest(
            translatable("file_size is 1 to %(max)s bytes (10 MB)."),
            values={"max": MAX_EVIDENCE_BYTES},
            param="file_size",
        )
    storage = evidence_storage()
    if not storage.healthy():
        raise ServiceUnavailable(translatable("The document storage is unavailable; retry later."))
    evidence_id = f"{EVIDENCE_PREFIX}{uuid.uuid4().hex}"
    key = f"evidence/{case.id}/{evidence_id}"
    ticket = storage.upload_address(key, mime_type, file_size)
    now = utcnow()
    evidence = DisputeEvidence(
        id=evidence_id,
        case_id=case.id,
        file_name=name,
        file_size=file_size,
        mime_type=mime_type,
        uploaded_by=uploaded_by,
        storage_key=key,
        upload_expires_at=now + timedelta(seconds=ticket.expires_in),
        created_at=now,
    )
    db.session.add(evidence)
    db.session.flush()
    return evidence, ticket


def complete_upload(
    account_id: str, mode: KeyMode, case_id: str, evidence_id: str
) -> DisputeEvidence:
    """Confirm an upload once the storage holds exactly the declared bytes (idempotent)."""
    case = get_case(account_id, mode, case_id)
    evidence = db.session.scalar(
        sa.select(DisputeEvidence)
        .where(DisputeEvidence.id == evidence_id, DisputeEvidence.case_id == case.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if evidence is None:
        raise NotFound(translatable("No such evidence."))
    if evidence.uploaded_at is not None:
        return evidence
    storage = evidence_storage()
    stored = _read_storage(storage.stored_size, evidence.storage_key)
    if stored is None:
        expired = utcnow() >= evidence.upload_expires_at
        raise Conflict(
            translatable("The upload address has expired without a file; ask for a new one.")
            if expired
            else translatable("No file has been uploaded to the address yet."),
            code="EVIDENCE_NOT_UPLOADED",
        )
    if stored != evidence.file_size:
        raise Conflict(
            translatable("The stored file is %(stored)s bytes, not the declared %(declared)s."),
            values={"stored": stored, "declared": evidence.file_size},
            code="EVIDENCE_SIZE_MISMATCH",
        )
    # A store written to directly (S3) never saw the bytes: read the file's start back.
    head = _read_storage(storage.stored_head, evidence.storage_key) or b""
    if not content_matches_type(head, evidence.mime_type):
        raise Conflict(
            translatable("The stored file is not %(type)s, as declared."),
            values={"type": evidence.mime_type},
            code="EVIDENCE_TYPE_MISMATCH",
        )
    evidence.uploaded_at = utcnow()
    case.updated_at = evidence.uploaded_at
    return evidence


def _read_storage(read: Callable[[str], T], key: str) -> T:
    """`read(key)` from the evidence storage; its outage is the API's 503."""
    try:
        return read(key)
    except StorageUnavailable as error:
        raise ServiceUnavailable(
            translatable("The document storage is unavailable; retry later.")
        ) from error


def list_evidence(account_id: str, mode: KeyMode, case_id: str) -> list[DisputeEvidence]:
    """Confirmed evidence of the case, newest first; unconfirmed items do not exist here."""
    case = get_case(account_id, mode, case_id)
    return list(
        db.session.scalars(
            sa.select(DisputeEvidence)
            .where(DisputeEvidence.case_id == case.id, DisputeEvidence.uploaded_at.is_not(None))
            .order_by(DisputeEvidence.created_at.desc(), DisputeEvidence.id.desc())
        )
    )


def view_url(evidence: DisputeEvidence) -> str:
    """A signed address that shows the file for 5 minutes."""
    return evidence_storage().view_address(evidence.storage_key)


def _checked_file_name(file_name: str) -> str:
    """The name as shown to people: no path, and no control, format (bidi overrides) or
    line-separator characters that could make `exe.pdf` of `fdp.exe`."""
    name = file_name.strip() if isinstance(file_name, str) else ""
    hidden = any(unicodedata.category(char) in HIDDEN_CATEGORIES for char in name)
    if not name or len(name) > MAX_FILE_NAME or hidden or not _SAFE_FILE_NAME.fullmatch(name):
        raise InvalidRequest(
            translatable(
                "file_name is 1 to %(max)s characters, without slashes or control characters."
            ),
            values={"max": MAX_FILE_NAME},
            param="file_name",
        )
    return name
