"""A web process's short memory of the API keys it has authenticated (issue 22), so a request
with a known key costs no database read, nor does a charge read its account's terms.

A remembered key, with its account's terms (`AccountTerms`), is trusted only while the
generation it was read under is still Redis's current one. Every change that can end a key
(a revocation, a rotation, an account deactivated) or change those terms moves the generation
after its commit (`note_change`, and the flush hook for changes made through the ORM), and
every request reads the generation in the same Redis round trip as its rate limits, so a
change made in any process takes effect in all of them at the next request. Without Redis
nothing is trusted (every request reads the database); an entry is also dropped after
MAX_AGE, the bound if a generation move is ever lost (Redis restarted empty, or a change
written around the application).
"""

import logging
import time
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from flask import current_app
from redis.exceptions import RedisError
from sqlalchemy.orm import Session

from app.extensions import get_redis
from app.models import Account, ApiKey, KeyMode

log = logging.getLogger(__name__)
GENERATION_KEY = "acme_api_keys_generation"
MAX_AGE_SECONDS = 60
EXTENSION = "acme_api_key_cache"
CHANGED = "acme_api_keys_changed"


# An account's columns its charges are made with: a change to one moves the generation.
ACCOUNT_TERMS = ("name", "city", "charge_expires_in")


@dataclass(frozen=True)
class AccountTerms:
    """What a charge needs of its account (its Pix code's merchant, its default lifetime)."""

    name: str
    city: str
    charge_expires_in: int


@dataclass(frozen=True)
class KnownKey:
    """What a request needs of its key and its account, as read from the database under
    `generation`."""

    id: str
    account_id: str
    mode: KeyMode
    fingerprint: str
    last_used_at: datetime | None
    account: AccountTerms
    generation: int
    read_at: float  # time.monotonic()


def recall(fingerprint: str) -> KnownKey | None:
    """The remembered key with this fingerprint, if it is not too old to trust."""
    known = _memory().get(fingerprint)
    if known is None or time.monotonic() - known.read_at > MAX_AGE_SECONDS:
        return None
    return known


def remember(key: ApiKey, generation: int) -> None:
    """Keep an active key (its account loaded with it) read from the database after
    `generation` was current."""
    account = key.account
    _memory()[key.fingerprint] = KnownKey(
        id=key.id,
        account_id=key.account_id,
        mode=key.mode,
        fingerprint=key.fingerprint,
        last_used_at=key.last_used_at,
        account=AccountTerms(**{name: getattr(account, name) for name in ACCOUNT_TERMS}),
        generation=generation,
        read_at=time.monotonic(),
    )


def forget(fingerprint: str) -> None:
    _memory().pop(fingerprint, None)


def current_generation() -> int | None:
    """Redis's generation now; None when Redis cannot be reached (then nothing is trusted)."""
    try:
        return int(get_redis().get(GENERATION_KEY) or 0)
    except RedisError:
        return None


def note_change(session: Session) -> None:
    """A key may have stopped working in this transaction: move the generation after its
    commit, so every process reads its keys again. Kept through a rollback: a needless move
    only makes the processes read their keys once more."""
    session.info[CHANGED] = True


def _memory() -> dict[str, KnownKey]:
    return current_app.extensions.setdefault(EXTENSION, {})


@sa.event.listens_for(Session, "after_flush")
def _note_orm_changes(session: Session, _flush_context) -> None:
    """A revocation, an account's deactivation or a change of its terms written through the
    ORM."""
    for changed in session.dirty:
        if (isinstance(changed, ApiKey) and _modified(changed, "revoked_at")) or (
            isinstance(changed, Account) and _modified(changed, "active", *ACCOUNT_TERMS)
        ):
            note_change(session)
            return


def _modified(instance, *attributes: str) -> bool:
    state = sa.inspect(instance).attrs
    return any(state[attribute].history.has_changes() for attribute in attributes)


@sa.event.listens_for(Session, "after_commit")
def _move_generation(session: Session) -> None:
    if not session.info.pop(CHANGED, False):
        return
    try:
        get_redis().incr(GENERATION_KEY)
    except RedisError:
        log.warning(
            "API key generation not moved; other processes may trust a changed key for up to %s s",
            MAX_AGE_SECONDS,
        )
