"""Housekeeping run by `rq cron`: forget what the service no longer needs to remember."""

from app.extensions import db
from app.services import auth, idempotency


def prune_idempotency_keys() -> int:
    """Drop idempotency keys past their retention period (IDEMPOTENCY_KEY_TTL_HOURS)."""
    removed = idempotency.prune()
    db.session.commit()
    return removed


def prune_revoked_tokens() -> int:
    """Drop logout records of tokens that have expired anyway."""
    removed = auth.prune_revoked_tokens()
    db.session.commit()
    return removed
