"""Admitting a request made with an API key: the key and its rate limits, in as few round
trips as stay correct (issue 22).

A key this process remembers (`api_key_cache`) costs one Redis round trip, the rate limits
and the key generation together, and no database read, unless a key changed somewhere since;
any other key is read from the database, and its last use recorded at once (the request has
written nothing else yet).
"""

from app.extensions import db
from app.models import ApiKey
from app.services import api_key_cache, api_keys, api_rate_limits
from app.services.api_rate_limits import Allowance


def admit(presented: str | None) -> tuple[ApiKey | api_key_cache.KnownKey, Allowance | None]:
    """The request's key and what is left of its rate limits; Unauthorized or RateLimited."""
    known = api_keys.recall(presented)
    if known is None:
        key = _read(presented)
        return key, api_rate_limits.count_request(key.id, key.account_id)
    allowance, values = api_rate_limits.count_request_and_read(
        known.id, known.account_id, (api_key_cache.GENERATION_KEY,)
    )
    if api_keys.trusted(known, values[0] if values else None):
        return known, allowance
    return _read(presented), allowance  # the same key (same fingerprint), or Unauthorized


def _read(presented: str | None) -> ApiKey:
    key = api_keys.authenticate(presented)
    if db.session.dirty:
        db.session.commit()  # last_used_at moved; nothing else is pending yet
    return key
