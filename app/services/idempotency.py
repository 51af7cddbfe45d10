"""The idempotency store: a financial write acts once per (account, scope, key).

The first request claims the key by inserting its row in a statement that commits as it runs,
under a unique constraint, so two concurrent requests can never both act. The action and the
stored response then commit together: a replay either finds the complete response or finds
the key still in flight. Only successful (2xx) answers are kept; when a request fails, its
work rolls back and the key is released so the client may retry with the same key.

A claim whose request died without answering is taken over after the lock timeout. Each
claim carries a lock token: completing or releasing needs the current token, so a request
that lost its claim to a takeover cannot store its answer, and its work is rolled back.
"""

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import TypeVar

import sqlalchemy as sa
from flask import current_app

from app import queueing
from app.errors import Conflict, InvalidRequest
from app.extensions import db, insert_for
from app.models import IdempotencyKey, pooled
from app.models.base import new_id, utcnow
from app.services import new_rows

T = TypeVar("T")
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
    """Either this request holds the key (`key_id`, `lock_token`) or it replays the first answer."""

    key_id: str | None = None
    lock_token: str | None = None
    replay: StoredResponse | None = None


def validate_key(key: str | None, param: str) -> str:
    if key is None or key == "":
        raise InvalidRequest(f"{param} is required for this request.", param=param)
    if not isinstance(key, str) or not MIN_KEY_LENGTH <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidRequest(
            f"{param} must be a string of {MIN_KEY_LENGTH} to {MAX_KEY_LENGTH} characters.",
            param=param,
        )
    return key


def request_fingerprint(method: str, path: str, raw_body: bytes) -> str:
    """Hash of what was asked: method, path and body, the JSON canonicalised (key order and
    spacing do not count)."""
    try:
        body = json.dumps(json.loads(raw_body or b"null"), sort_keys=True, separators=(",", ":"))
        data = body.encode()
    except ValueError:
        data = raw_body
    return hashlib.sha256(f"{method} {path}\n".encode() + data).hexdigest()


def claim(account_id: str, scope: str, key: str, request_hash: str) -> Claim:
    """Claim the key for this request, or answer with the first request's stored response.
    The claim is one statement that commits by itself (autocommit: no BEGIN and COMMIT round
    trips around it): an INSERT that does nothing when the key is taken."""
    token = str(uuid.uuid4())
    queueing.commit(db.session())  # ends a read authentication began
    claimed = pooled.first_row(
        _claim_statement(db.engine.dialect.name),
        {
            "new_key_id": new_id(),
            "claimed_account": account_id,
            "claimed_scope": scope,
            "claimed_key": key,
            "claimed_hash": request_hash,
            "token": token,
            "claimed_at": utcnow(),
        },
    )
    if claimed is not None:
        return Claim(key_id=claimed[0], lock_token=token)
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
            "This idempotency key was already used with a different request.", code=KEY_REUSED
        )
    if existing.is_completed:
        return Claim(replay=StoredResponse(existing.response_status, existing.response_body))
    taken = _take_over_stale(existing)
    if taken is not None:
        return taken
    raise Conflict(
        "A request with this idempotency key is still being processed; retry shortly.",
        code=REQUEST_IN_PROGRESS,
    )


def _take_over_stale(row: IdempotencyKey) -> Claim | None:
    """Claim a key whose first request stopped answering (crash) once its lock is stale."""
    timeout = timedelta(seconds=current_app.config["IDEMPOTENCY_LOCK_TIMEOUT_SECONDS"])
    now = utcnow()
    if row.locked_at is not None and now - row.locked_at < timeout:
        return None
    token = str(uuid.uuid4())
    taken = db.session.execute(
        sa.update(IdempotencyKey)
        .where(
            IdempotencyKey.id == row.id,
            IdempotencyKey.response_status.is_(None),
            IdempotencyKey.lock_token == row.lock_token,
        )
        .values(lock_token=token, locked_at=now)
    )
    db.session.commit()
    return Claim(key_id=row.id, lock_token=token) if taken.rowcount == 1 else None


def complete(claimed: Claim, status: int, body: str) -> None:
    """Store the answer in the caller's transaction, beside the work it describes (flushed
    first); when that work is only new rows and no transaction is open (a charge's creation),
    the rows and the answer go in one statement instead (`new_rows`).

    Raises Conflict when the claim was taken over meanwhile; the caller must roll back.
    """
    answer = {
        "key_id": claimed.key_id,
        "token": claimed.lock_token,
        "answer_status": status,
        "answer_body": body,
        "answered_at": utcnow(),
    }
    session = db.session()
    if new_rows.writable_alone(session):
        stored = new_rows.write_with(session, _STORE_ANSWER, answer)
    else:
        session.flush()
        stored = session.execute(_STORE_ANSWER, answer).rowcount == 1
    if not stored:
        raise Conflict(
            "This request took too long and was superseded by a retry with the same key.",
            code=REQUEST_IN_PROGRESS,
        )


_KEYS = IdempotencyKey.__table__


@cache
def _claim_statement(dialect: str) -> sa.Insert:
    """`claim`'s INSERT, on the table and built once per dialect (`insert_for` writes the one
    `dialect` names) with its values as parameters: building and hashing it per request was
    a third of the claim. On PostgreSQL the claim commits without waiting for the disk
    (`pooled.unflushed_commit`): a claim lost in a database crash costs nothing
    (docs/decisions.md, Idempotency)."""
    claimed = {
        "id": "new_key_id",
        "account_id": "claimed_account",
        "scope": "claimed_scope",
        "key": "claimed_key",
        "request_hash": "claimed_hash",
        "lock_token": "token",
        "locked_at": "claimed_at",
        "created_at": "claimed_at",
    }
    values = {
        column: sa.bindparam(name, type_=_KEYS.c[column].type) for column, name in claimed.items()
    }
    insert = insert_for(_KEYS, dialect)
    if dialect == "postgresql":
        unflushed = pooled.unflushed_commit()
        insert = insert.from_select(
            list(values), sa.select(*values.values()).select_from(unflushed)
        )
    else:
        insert = insert.values(**values)
    return insert.on_conflict_do_nothing(index_elements=["account_id", "scope", "key"]).returning(
        _KEYS.c.id
    )


# `complete`'s UPDATE, on the table and built once: no ORM bookkeeping for a row no object in
# the session stands for, and the compiled form reused.
_STORE_ANSWER = (
    sa.update(_KEYS)
    .where(_KEYS.c.id == sa.bindparam("key_id"), _KEYS.c.lock_token == sa.bindparam("token"))
    .values(
        response_status=sa.bindparam("answer_status"),
        response_body=sa.bindparam("answer_body"),
        completed_at=sa.bindparam("answered_at"),
        lock_token=None,
        locked_at=None,
    )
)


def run_once(claimed: Claim, work: Callable[[], tuple[T, tuple[int, str] | None]]) -> T:
    """Run a claimed request's work: its changes and its answer commit together.

    `work` returns its result and the answer to remember, `(status, body)`, or None when
    there is nothing to remember (a refusal). Then, or when it raises, everything it did is
    rolled back and the key is released, so the client may correct the request and retry.
    """
    try:
        result, answer = work()
        if answer is not None:
            complete(claimed, *answer)
            db.session.commit()
            return result
    except Exception:
        _abandon(claimed)
        raise
    _abandon(claimed)
    return result


def _abandon(claimed: Claim) -> None:
    db.session.rollback()
    release(claimed)


def release(claimed: Claim) -> None:
    """Forget a claim whose request failed, so the same key may be used again."""
    db.session.execute(
        sa.delete(IdempotencyKey).where(
            IdempotencyKey.id == claimed.key_id,
            IdempotencyKey.lock_token == claimed.lock_token,
        )
    )
    db.session.commit()


def prune(now: datetime | None = None) -> int:
    """Forget keys older than the retention period; returns how many."""
    ttl = timedelta(hours=current_app.config["IDEMPOTENCY_KEY_TTL_HOURS"])
    result = db.session.execute(
        sa.delete(IdempotencyKey).where(IdempotencyKey.created_at < (now or utcnow()) - ttl)
    )
    return result.rowcount
