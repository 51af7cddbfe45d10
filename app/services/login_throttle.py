"""Login throttling: failed sign-ins counted in Redis, per e-mail and per client address.

One mechanism for the dashboard form and the API login. The counts live in Redis so every web
process sees them. Each attempt is counted before its password is checked, atomically, so
parallel guesses cannot slip past the limit; past it, attempts are refused unchecked until the
window, started by the first failure, ends. A success clears the e-mail's count and gives the
address back only its own attempt: clearing the address's count would let someone with one
valid account guess others' passwords from the same address for ever. IPv6 clients count by
their /64 (one subscriber's block). Keys hold SHA-256 digests, not e-mails or addresses. If
Redis cannot be reached, sign-in goes on unthrottled (logged) rather than becoming impossible.
"""

import hashlib
import ipaddress
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import current_app
from redis.exceptions import RedisError

from app.errors import InvalidRequest, RateLimited, Unauthorized
from app.extensions import get_redis
from app.marks import translatable
from app.services.accounts import normalise_email
from app.services.redis_counters import count_in_windows

log = logging.getLogger(__name__)
KEY_PREFIX = "login_failures"


@dataclass(frozen=True)
class _Counter:
    kind: str
    key: str
    limit: int


# An attempt given back (it failed for another reason, or the address's success): never
# recreates an expired key, which would then live for ever.
_GIVE_BACK = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECR', KEYS[1]) end
"""


@contextmanager
def guard(email: str, client_ip: str | None) -> Iterator[None]:
    """Wrap a login. The attempt is counted before the password is checked and refused
    (RateLimited) past a limit; an Unauthorized from inside leaves it counted as a failure, a
    success clears the e-mail's count and gives the address its attempt back, and any other
    error gives both back."""
    counters = _counters(email, client_ip)
    reserved = _reserve(counters, client_ip)
    try:
        yield
    except Unauthorized:
        raise
    except Exception:
        _give_back(counters if reserved else [])
        raise
    if reserved:
        _clear_after_success(counters)


def _reserve(counters: list["_Counter"], client_ip: str | None) -> bool:
    """Count the attempt on every counter; RateLimited, with the seconds until the window
    ends, when one is past its limit. False when Redis cannot be reached (not throttled)."""
    window = current_app.config["LOGIN_FAILURE_WINDOW_SECONDS"]
    try:
        counts = count_in_windows(get_redis(), [(c.key, None) for c in counters], window)
    except RedisError:
        log.warning("login throttle unavailable; sign-in not throttled", exc_info=True)
        return False
    locked_for = [
        ttl for counter, (count, ttl) in zip(counters, counts, strict=True) if count > counter.limit
    ]
    for counter, (count, _) in zip(counters, counts, strict=True):
        if count == counter.limit + 1:
            log.warning(
                "sign-in locked after repeated failures",
                extra={"counter": counter.kind, "client_ip": client_ip},
            )
    if locked_for:  # a refused attempt is no failure: the counters it did not trip forget it
        _give_back([c for c, (count, _) in zip(counters, counts, strict=True) if count <= c.limit])
        retry_after = max(locked_for)
        message, values = refusal_message(retry_after)
        raise RateLimited(message, values=values, retry_after=retry_after)
    return True


def _clear_after_success(counters: list["_Counter"]) -> None:
    email_counter, *others = counters
    try:
        redis = get_redis()
        redis.delete(email_counter.key)
        for counter in others:
            redis.eval(_GIVE_BACK, 1, counter.key)
    except RedisError:
        log.warning("login throttle unavailable; failures not cleared", exc_info=True)


def _give_back(counters: list["_Counter"]) -> None:
    try:
        redis = get_redis()
        for counter in counters:
            redis.eval(_GIVE_BACK, 1, counter.key)
    except RedisError:
        log.warning("login throttle unavailable; attempt not given back", exc_info=True)


def refusal_message(retry_after: int) -> tuple[str, dict]:
    """The same words whether or not the e-mail belongs to anyone, and their values."""
    minutes = math.ceil(retry_after / 60)
    if minutes == 1:
        return translatable("Too many sign-in attempts. Try again in 1 minute."), {}
    return translatable("Too many sign-in attempts. Try again in %(minutes)s minutes."), {
        "minutes": minutes
    }


def _counters(email: str, client_ip: str | None) -> list[_Counter]:
    counters = [_email_counter(email)]
    per_ip_limit = current_app.config["LOGIN_MAX_FAILURES_PER_IP"]
    if client_ip and per_ip_limit:
        counters.append(_Counter("ip", _key("ip", _client_block(client_ip)), per_ip_limit))
    return counters


def _email_counter(email: str) -> _Counter:
    try:
        identity = normalise_email(email)
    except InvalidRequest:  # no account can have it; still counted, as login accepts it
        identity = email.strip().lower()
    return _Counter("email", _key("email", identity), current_app.config["LOGIN_MAX_FAILURES"])


def _client_block(client_ip: str) -> str:
    """An IPv4 address as it is; an IPv6 address as its /64, which one subscriber holds whole."""
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return client_ip
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _key(kind: str, value: str) -> str:
    return f"{KEY_PREFIX}:{kind}:{hashlib.sha256(value.encode()).hexdigest()}"
