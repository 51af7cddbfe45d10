"""How long to wait before trying again, for everything that retries a remote party (webhook
deliveries, the PSP's API Pix): exponential backoff with jitter, so callers that failed
together do not come back together, and the server's own `Retry-After` when it sends one
(RFC 9110 §10.2.3). Pure arithmetic: no Flask, no database, the randomness injectable.
"""

import math
import random
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

DEFAULT_JITTER = 0.1
# Longer delta-seconds than this are past any sensible cap; int() and timedelta refuse them.
MAX_DELTA_SECONDS_DIGITS = 15


def jittered(wait: timedelta, jitter: float = DEFAULT_JITTER, rng=random) -> timedelta:
    """`wait` spread uniformly over ±`jitter` (a fraction of it)."""
    if not 0 <= jitter < 1:
        raise ValueError(f"jitter must be in [0, 1): {jitter}")
    return wait * rng.uniform(1 - jitter, 1 + jitter) if jitter else wait


def backoff(
    attempt: int,
    base: timedelta,
    cap: timedelta,
    jitter: float = DEFAULT_JITTER,
    rng=random,
) -> timedelta:
    """The wait before retry `attempt` (0 for the first): `base`, doubled at each attempt up to
    `cap`, then jittered (so a capped wait may exceed `cap` by the jitter; with jitter 0 it is
    exact: `min(base * 2**attempt, cap)`)."""
    if attempt < 0:
        raise ValueError(f"attempt must not be negative: {attempt}")
    # In float seconds, so a large attempt saturates at the cap instead of overflowing.
    seconds = min(base.total_seconds() * 2.0 ** min(attempt, 1000), cap.total_seconds())
    return jittered(timedelta(seconds=seconds), jitter, rng)


def retry_after(value: str | None, cap: timedelta, now: datetime | None = None) -> timedelta | None:
    """A `Retry-After` header value (delta-seconds or an HTTP-date, measured from `now`) as a
    wait clamped to [0, cap]; None when it is absent or unreadable, so the caller falls back
    to its backoff."""
    value = (value or "").strip()
    if value.isascii() and value.isdigit():
        seconds = int(value) if len(value) <= MAX_DELTA_SECONDS_DIGITS else math.inf
        return timedelta(seconds=min(seconds, cap.total_seconds()))
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:  # "-0000" means UTC with no zone information
            when = when.replace(tzinfo=UTC)
        wait = when - (now or datetime.now(UTC))
    except (TypeError, ValueError, OverflowError):
        return None
    return min(max(wait, timedelta(0)), cap)
