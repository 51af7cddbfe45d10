"""Counters in Redis that open their own window with their first count.

Shared by the login throttle and the API rate limits, so every web process sees the same
counts. One script counts and starts the window atomically: no key ever lives without an
expiry, and parallel requests each see their own count (no check-then-count race).
"""

from redis import Redis

_COUNT_IN_WINDOW = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('TTL', KEYS[1])}
"""


def count_in_window(redis: Redis, key: str, window_seconds: int) -> tuple[int, int]:
    """Count one more on `key`: (the count in its window, seconds until the window ends).
    Raises RedisError when Redis cannot be reached; callers decide whether to fail open."""
    count, ttl = redis.eval(_COUNT_IN_WINDOW, 1, key, window_seconds)
    return int(count), int(ttl) if int(ttl) > 0 else window_seconds
