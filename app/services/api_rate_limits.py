"""API rate limits: requests per API key and per account (all its keys), per minute.

Fixed one-minute windows counted in Redis, so the limits hold across web processes. A key past
its own limit is refused without touching its account's count, so one runaway key cannot use up
the allowance of the account's other keys. If Redis cannot be reached, requests go through
unlimited (logged): payments must not stop because the counters are down, nor slow down (the
app's Redis client gives up within half a second, then not at all for a few seconds:
`app.extensions.redis_client`).
"""

import logging
from dataclasses import dataclass

from flask import current_app
from redis.exceptions import RedisError

from app.errors import RateLimited
from app.extensions import get_redis
from app.services.redis_counters import count_in_windows_and_read

log = logging.getLogger(__name__)
KEY_PREFIX = "api_rate"
WINDOW_SECONDS = 60
LIMIT_HEADER = "X-RateLimit-Limit-Minute"
REMAINING_HEADER = "X-RateLimit-Remaining-Minute"


@dataclass(frozen=True)
class Allowance:
    """What is left of the tightest limit in the current window."""

    limit: int
    remaining: int

    @property
    def headers(self) -> dict[str, str]:
        return {LIMIT_HEADER: str(self.limit), REMAINING_HEADER: str(self.remaining)}


def count_request(api_key_id: str, account_id: str) -> Allowance | None:
    """Count one request against its key, then its account: the allowance left, RateLimited
    (with the rate-limit headers) past either limit, or None when Redis cannot be reached."""
    return count_request_and_read(api_key_id, account_id, ())[0]


def count_request_and_read(
    api_key_id: str, account_id: str, read: tuple[str, ...]
) -> tuple[Allowance | None, list[str] | None]:
    """`count_request`, and the values of the Redis keys `read` (None without Redis) in the
    same round trip."""
    config = current_app.config
    limits = [
        ("API key", f"{KEY_PREFIX}:key:{api_key_id}", config["API_RATE_LIMIT_PER_MINUTE"]),
        (
            "account",
            f"{KEY_PREFIX}:account:{account_id}",
            config["API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE"],
        ),
    ]
    try:
        counted, values = count_in_windows_and_read(
            get_redis(), [(key, limit) for _, key, limit in limits], WINDOW_SECONDS, read
        )
    except RedisError:
        log.warning("API rate limits unavailable; request not limited", exc_info=True)
        return None, None
    allowances = []
    for (scope, _, limit), (count, seconds_left) in zip(limits, counted, strict=False):
        if count > limit:
            raise RateLimited(
                f"Too many requests for this {scope}: at most {limit} a minute.",
                retry_after=seconds_left,
                headers=Allowance(limit, 0).headers,
            )
        allowances.append(Allowance(limit, limit - count))
    return min(allowances, key=lambda allowance: allowance.remaining), values
