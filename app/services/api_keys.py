"""API keys: issue, list, rotate, revoke, and authenticate a presented key.

A key is `ak_live_` or `ak_test_` followed by 24 random bytes in base64url (32 characters).
Only its SHA-256 fingerprint and 12-character prefix are stored; a presented key is found by
its fingerprint, so the comparison never touches a stored secret. Issue, rotate and revoke
are audited with the acting user and the fingerprint.
"""

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.orm import contains_eager

from app.errors import InvalidRequest, NotFound, Unauthorized
from app.extensions import db
from app.marks import translatable
from app.models import Account, ApiKey, KeyMode, Membership
from app.models.base import utcnow
from app.services import accounts, api_key_cache, audit

KEY_PATTERN = re.compile(r"ak_(live|test)_[A-Za-z0-9_-]{32}")
PREFIX_LENGTH = 12
MAX_LABEL_LENGTH = 64
ROLE_REQUIRED = "API_KEY_ROLE_REQUIRED"


@dataclass(frozen=True)
class IssuedKey:
    """A stored key plus its cleartext, which exists only in this answer."""

    key: ApiKey
    cleartext: str


def fingerprint(cleartext: str) -> str:
    return hashlib.sha256(cleartext.encode()).hexdigest()


def _new_cleartext(mode: KeyMode) -> str:
    return f"ak_{mode}_{secrets.token_urlsafe(24)}"


def require_manager(membership: Membership) -> None:
    """Issuing, rotating and revoking keys is for OWNER and ADMIN members only."""
    accounts.require_manager(
        membership, "Only the account's OWNER or ADMIN may manage API keys.", ROLE_REQUIRED
    )


def list_keys(account_id: str) -> list[ApiKey]:
    """The account's usable keys, newest first (revoked keys are gone for good)."""
    return list(
        db.session.scalars(
            sa.select(ApiKey)
            .where(ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None))
            .order_by(ApiKey.created_at.desc(), ApiKey.id)
        )
    )


def issue(actor: Membership, *, label: str | None, mode: KeyMode) -> IssuedKey:
    require_manager(actor)
    issued = _create(actor.account_id, actor.user_id, label=label, mode=mode)
    _audit(actor.account_id, actor.user_id, "api_key.issued", issued.key)
    return issued


def rotate(actor: Membership, key_id: str, *, label: str | None = None) -> IssuedKey:
    """Revoke the key and issue its replacement in one transaction.

    Two concurrent rotations (or a rotation racing a revocation) cannot both succeed: the
    revocation is conditional, and the loser sees the key already revoked and gets 404.
    """
    require_manager(actor)
    old = _get_active(actor.account_id, key_id)
    if not _revoke_if_active(old):
        raise NotFound(translatable("No such API key."))
    issued = _create(
        actor.account_id,
        actor.user_id,
        label=old.label if label is None else label,
        mode=old.mode,
    )
    old.replaced_by_id = issued.key.id
    _audit(
        actor.account_id,
        actor.user_id,
        "api_key.rotated",
        issued.key,
        replaced_fingerprint=old.fingerprint,
    )
    return issued


def revoke(actor: Membership, key_id: str) -> ApiKey:
    """Revoke for good. Revoking an already revoked key of the account changes nothing."""
    require_manager(actor)
    key = db.session.scalar(
        sa.select(ApiKey).where(ApiKey.id == key_id, ApiKey.account_id == actor.account_id)
    )
    if key is None:
        raise NotFound(translatable("No such API key."))
    if _revoke_if_active(key):
        _audit(actor.account_id, actor.user_id, "api_key.revoked", key)
    return key


def revoke_labelled(account_id: str, label: str) -> int:
    """Revoke every active key of the account with this label, as the system (demo seed)."""
    keys = db.session.scalars(
        sa.select(ApiKey).where(
            ApiKey.account_id == account_id, ApiKey.label == label, ApiKey.revoked_at.is_(None)
        )
    ).all()
    revoked = 0
    for key in keys:
        if _revoke_if_active(key):
            _audit(account_id, None, "api_key.revoked", key, via="cli")
            revoked += 1
    return revoked


def _revoke_if_active(key: ApiKey) -> bool:
    """Conditional revocation: True only for the one caller that actually revoked the key."""
    now = utcnow()
    result = db.session.execute(
        sa.update(ApiKey)
        .where(ApiKey.id == key.id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount == 1:
        key.revoked_at = now
        api_key_cache.note_change(db.session())
        return True
    return False


def authenticate(presented: str | None) -> ApiKey:
    """The active key matching exactly what was sent, or 401 (missing, wrong, padded, revoked),
    read from the database; this process then remembers it (`api_key_cache`) under the
    generation current before the read."""
    if not presented or not KEY_PATTERN.fullmatch(presented):
        raise Unauthorized("Missing or invalid API key.")
    presented_fingerprint = fingerprint(presented)
    generation = api_key_cache.current_generation()
    key = db.session.scalar(
        sa.select(ApiKey)
        .join(Account)
        .options(contains_eager(ApiKey.account))  # its terms, remembered with the key
        .where(
            ApiKey.fingerprint == presented_fingerprint,
            ApiKey.revoked_at.is_(None),
            Account.active,
        )
    )
    if key is None:
        api_key_cache.forget(presented_fingerprint)
        raise Unauthorized("Missing or invalid API key.")
    if _last_use_due(key.last_used_at):
        key.last_used_at = utcnow()
    if generation is not None:
        api_key_cache.remember(key, generation)
    return key


def recall(presented: str | None) -> api_key_cache.KnownKey | None:
    """The key as this process remembers it, nothing read; `trusted` says if it may be used."""
    if not presented or not KEY_PATTERN.fullmatch(presented):
        return None
    return api_key_cache.recall(fingerprint(presented))


def trusted(known: api_key_cache.KnownKey, generation: str | None) -> bool:
    """A remembered key may be used without reading the database while no key has changed
    since it was read (`generation`, as Redis has it now; None without Redis) and its last
    use need not be recorded yet."""
    return (
        generation is not None
        and int(generation or 0) == known.generation
        and not (_last_use_due(known.last_used_at))
    )


def _last_use_due(last_used_at) -> bool:
    """Last use is recorded at most once per resolution window, so reads stay cheap."""
    window = timedelta(seconds=current_app.config["API_KEY_LAST_USED_RESOLUTION_SECONDS"])
    return last_used_at is None or utcnow() - last_used_at >= window


def _get_active(account_id: str, key_id: str) -> ApiKey:
    key = db.session.scalar(
        sa.select(ApiKey).where(
            ApiKey.id == key_id, ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None)
        )
    )
    if key is None:
        raise NotFound(translatable("No such API key."))
    return key


def _create(account_id: str, user_id: str | None, *, label: str | None, mode: KeyMode) -> IssuedKey:
    if label is not None and len(label) > MAX_LABEL_LENGTH:
        raise InvalidRequest(
            translatable("label must be at most %(max)s characters."),
            values={"max": MAX_LABEL_LENGTH},
            param="label",
        )
    cleartext = _new_cleartext(mode)
    key = ApiKey(
        account_id=account_id,
        fingerprint=fingerprint(cleartext),
        prefix=cleartext[:PREFIX_LENGTH],
        label=label,
        mode=mode,
        created_by_user_id=user_id,
    )
    db.session.add(key)
    db.session.flush()
    return IssuedKey(key=key, cleartext=cleartext)


def _audit(account_id: str, actor_user_id: str | None, action: str, key: ApiKey, **details) -> None:
    audit.record(
        account_id=account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="api_key",
        subject_id=key.id,
        details={"fingerprint": key.fingerprint, "mode": str(key.mode), **details},
    )


def issue_for_account(account_id: str, *, label: str, mode: KeyMode) -> IssuedKey:
    """Issue a key without an acting member (operator CLI, demo seed); audited as system."""
    issued = _create(account_id, None, label=label, mode=mode)
    _audit(account_id, None, "api_key.issued", issued.key, via="cli")
    return issued
