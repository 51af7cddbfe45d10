"""Counters in Redis that open their own window with their first count, and one that counts
only once seeded.

Shared by the login throttle, the API rate limits and the velocity guard's bound, so every
web process sees the same counts. One script counts and starts the windows atomically, in
one round trip however many counters a request touches: no key ever lives without an
expiry, and parallel requests each see their own count (no check-then-count race).
"""

from collections.abc import Sequence

from redis import Redis

# ARGV[1] is the window, ARGV[2] the number n of counters; ARGV[2 + i] the limit of KEYS[i]
# (i <= n), or "" for none. Counting stops after the first key past its limit. KEYS after the
# n-th are only read.
_COUNT_IN_WINDOWS = """
local n = tonumber(ARGV[2])
local counted = {}
for i = 1, n do
  local key = KEYS[i]
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('EXPIRE', key, ARGV[1]) end
  counted[#counted + 1] = count
  counted[#counted + 1] = redis.call('TTL', key)
  local limit = ARGV[i + 2]
  if limit ~= '' and count > tonumber(limit) then break end
end
local read = {}
for i = n + 1, #KEYS do
  read[#read + 1] = redis.call('GET', KEYS[i]) or ''
end
return {counted, read}
"""


# ARGV[1] is added to KEYS[1] only if the key exists: nil (None in Python) when it is missing.
_ADD_IF_KEPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""


def add_if_kept(redis: Redis, key: str, amount: int = 1) -> int | None:
    """Add `amount` to `key` if it exists: its new value; None, writing nothing, when it does
    not. For a counter that means something only once seeded (the velocity guard's bound on
    an account's live charges): a key that expired or was lost is never counted from zero,
    nor left without its expiry. Raises RedisError when Redis cannot be reached."""
    added = redis.eval(_ADD_IF_KEPT, 1, key, amount)
    return None if added is None else int(added)


def count_in_windows(
    redis: Redis, counters: Sequence[tuple[str, int | None]], window_seconds: int
) -> list[tuple[int, int]]:
    """Count one more on each `(key, limit)` in order: (the count in its window, seconds
    until the window ends) for each key counted. A key past its limit stops the counting
    there (the keys after it are not counted: a request refused by one limit does not use up
    the next); a None limit never stops it. Raises RedisError when Redis cannot be reached;
    callers decide whether to fail open."""
    return count_in_windows_and_read(redis, counters, window_seconds, ())[0]


def count_in_windows_and_read(
    redis: Redis,
    counters: Sequence[tuple[str, int | None]],
    window_seconds: int,
    read: Sequence[str],
) -> tuple[list[tuple[int, int]], list[str]]:
    """`count_in_windows`, and the values of the `read` keys ("" for a missing one), in the
    same round trip."""
    keys = [key for key, _ in counters]
    limits = ["" if limit is None else str(limit) for _, limit in counters]
    counted, values = redis.eval(
        _COUNT_IN_WINDOWS, len(keys) + len(read), *keys, *read, window_seconds, len(keys), *limits
    )
    pairs = zip(counted[::2], counted[1::2], strict=True)
    return (
        [(int(count), int(ttl) if int(ttl) > 0 else window_seconds) for count, ttl in pairs],
        [value.decode() if isinstance(value, bytes) else str(value) for value in values],
    )
