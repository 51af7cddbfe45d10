"""The idempotency store: a financial write acts once per (account, scope, key).

The first request claims the key by inserting its row in a committed transaction of its own,
under a unique constraint, so two concurrent requests can never both act. The action and the
stored response then commit together: a replay either finds the complete response or finds
the key still in flight. Only successful (2xx) answers are kept; when a request fails, its
work rolls back and the key is released so the client may retry with the same key.
A claim whose request died without answering is taken over after the lock timeout.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError

from app.errors import Conflict, InvalidRequest
from app.extensions import db
from app.models import IdempotencyKey
from app.models.base import utcnow

MIN_KEY_LENGTH = 8
MAX_KEY_LENGTH = 128
KEY_REUSED = "idempotency_key_reused"
REQUEST_IN_PROGRESS = "idempotency_request_in_progress"


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str


@dataclass(frozen=True)
class Claim:
    """Either this request owns the key (`key_id`), or it replays the first answer."""

    key_id: str | None = None
    replay: StoredResponse | None = None


def validate_key(key: str | None, param: str) -> str:
    if key is None or key == "":
        raise InvalidRequest(f"{param} is required for this request.", param=param)
    if not MIN_KEY_LENGTH <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidRequest(
            f"{param} must be {MIN_KEY_LENGTH} to {MAX_KEY_LENGTH} characters long.", param=param
        )
    return key


def request_fingerprint(raw_body: bytes) -> str:
    """Hash of the request body; JSON is canonicalised so key order and spacing do not count."""
    try:
        canonical = json.dumps(
            json.loads(raw_body or b"null"), sort_keys=True, separators=(",", ":")
        )
        data = canonical.encode()
    except ValueError:
        data = raw_body
    return hashlib.sha256(data).hexdigest()


def claim(account_id: str, scope: str, key: str, request_hash: str) -> Claim:
    """Claim the key for this request, or answer with the first request's stored response."""
    row = IdempotencyKey(
        account_id=account_id, scope=scope, key=key, request_hash=request_hash, locked_at=utcnow()
    )
    db.session.add(row)
    try:
        db.session.commit()
        return Claim(key_id=row.id)
    except IntegrityError:
        db.session.rollback()
    existing = db.session.scalar(
        sa.select(IdempotencyKey).where(
            IdempotencyKey.account_id == account_id,
            IdempotencyKey.scope == scope,
            IdempotencyKey.key == key,
        )
    )
    if existing is None:  # released between our insert and this read: the first one failed
        return claim(account_id, scope, key, request_hash)
    if existing.request_hash != request_hash:
        raise Conflict(
            "This Idempotency-Key was already used with a different request body.",
            code=KEY_REUSED,
        )
    if existing.is_completed:
        return Claim(replay=StoredResponse(existing.response_status, existing.response_body))
    if _take_over_stale(existing):
        return Claim(key_id=existing.id)
    raise Conflict(
        "A request with this Idempotency-Key is still being processed; retry shortly.",
        code=REQUEST_IN_PROGRESS,
    )


def _take_over_stale(row: IdempotencyKey) -> bool:
    """Claim a key whose first request stopped answering (crash) once its lock is stale."""
    timeout = timedelta(seconds=current_app.config["IDEMPOTENCY_LOCK_TIMEOUT_SECONDS"])
    now = utcnow()
    if row.locked_at is not None and now - row.locked_at < timeout:
        return False
    taken = db.session.execute(
        sa.update(IdempotencyKey)
        .where(
            IdempotencyKey.id == row.id,
            IdempotencyKey.response_status.is_(None),
            IdempotencyKey.locked_at == row.locked_at,
        )
        .values(locked_at=now)
    )
    db.session.commit()
    return taken.rowcount == 1


def complete(key_id: str, status: int, body: str) -> None:
    """Store the answer in the caller's transaction, beside the work it describes."""
    db.session.execute(
        sa.update(IdempotencyKey)
        .where(IdempotencyKey.id == key_id)
        .values(response_status=status, response_body=body, completed_at=utcnow(), locked_at=None)
    )


def release(key_id: str) -> None:
    """Forget a claim whose request failed, so the same key may be used again."""
    db.session.execute(sa.delete(IdempotencyKey).where(IdempotencyKey.id == key_id))
    db.session.commit()


def prune(now: datetime | None = None) -> int:
    """Forget keys older than the retention period; returns how many."""
    ttl = timedelta(hours=current_app.config["IDEMPOTENCY_KEY_TTL_HOURS"])
    result = db.session.execute(
        sa.delete(IdempotencyKey).where(IdempotencyKey.created_at < (now or utcnow()) - ttl)
    )
    return result.rowcount
