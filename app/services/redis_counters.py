"""Counters in Redis that open their own window with their first count.

Shared by the login throttle and the API rate limits, so every web process sees the same
counts. One script counts and starts the windows atomically, in one round trip however many
counters a request touches: no key ever lives without an expiry, and parallel requests each
see their own count (no check-then-count race).
"""

from collections.abc import Sequence

from redis import Redis

# ARGV[1] is the window; ARGV[1 + i] the limit of KEYS[i], or "" for none. Counting stops
# after the first key past its limit.
_COUNT_IN_WINDOWS = """
local counted = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('EXPIRE', key, ARGV[1]) end
  counted[#counted + 1] = count
  counted[#counted + 1] = redis.call('TTL', key)
  local limit = ARGV[i + 1]
  if limit ~= '' and count > tonumber(limit) then break end
end
return counted
"""


def count_in_windows(
    redis: Redis, counters: Sequence[tuple[str, int | None]], window_seconds: int
) -> list[tuple[int, int]]:
    """Count one more on each `(key, limit)` in order: (the count in its window, seconds
    until the window ends) for each key counted. A key past its limit stops the counting
    there (the keys after it are not counted: a request refused by one limit does not use up
    the next); a None limit never stops it. Raises RedisError when Redis cannot be reached;
    callers decide whether to fail open."""
    keys = [key for key, _ in counters]
    limits = ["" if limit is None else str(limit) for _, limit in counters]
    counted = redis.eval(_COUNT_IN_WINDOWS, len(keys), *keys, window_seconds, *limits)
    pairs = zip(counted[::2], counted[1::2], strict=True)
    return [(int(count), int(ttl) if int(ttl) > 0 else window_seconds) for count, ttl in pairs]
