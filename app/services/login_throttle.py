"""Login throttling: failed sign-ins counted in Redis, per e-mail and per client address.

One mechanism for the dashboard form and the API login. The counts live in Redis so every web
process sees them. Once a count reaches its limit, further attempts are refused before the
password is checked, so guessing costs nothing but time. Each failure restarts the window, so
a lock ends one window after the last failure and a key never lives without an expiry. A
success clears the e-mail's count only: clearing the address's count would let someone with
one valid account guess others' passwords from the same address for ever. Keys hold SHA-256
digests, not e-mails or addresses. If Redis cannot be reached, sign-in goes on unthrottled
(logged) rather than becoming impossible.
"""

import hashlib
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import current_app
from redis.exceptions import RedisError

from app.errors import InvalidRequest, RateLimited, Unauthorized
from app.extensions import get_redis
from app.services.accounts import normalise_email

log = logging.getLogger(__name__)
KEY_PREFIX = "login_failures"


@dataclass(frozen=True)
class _Counter:
    kind: str
    key: str
    limit: int


@contextmanager
def guard(email: str, client_ip: str | None) -> Iterator[None]:
    """Wrap a login: refused (RateLimited) while locked; an Unauthorized from inside counts
    as a failure, a clean exit clears the e-mail's count, other errors count for nothing."""
    ensure_allowed(email, client_ip)
    try:
        yield
    except Unauthorized:
        record_failure(email, client_ip)
        raise
    clear(email)


def ensure_allowed(email: str, client_ip: str | None) -> None:
    """Raise RateLimited, with the seconds until the lock ends, when a count is at its limit."""
    counters = _counters(email, client_ip)
    try:
        with get_redis().pipeline(transaction=False) as pipe:
            for counter in counters:
                pipe.get(counter.key)
                pipe.ttl(counter.key)
            replies = pipe.execute()
    except RedisError:
        log.warning("login throttle unavailable; sign-in not throttled", exc_info=True)
        return
    window = current_app.config["LOGIN_FAILURE_WINDOW_SECONDS"]
    locked_for = [
        ttl if ttl > 0 else window
        for counter, count, ttl in zip(counters, replies[::2], replies[1::2], strict=True)
        if count is not None and int(count) >= counter.limit
    ]
    if locked_for:
        retry_after = max(locked_for)
        raise RateLimited(refusal_message(retry_after), retry_after=retry_after)


def record_failure(email: str, client_ip: str | None) -> None:
    """Count one failed attempt against the e-mail and the address (INCR + EXPIRE, atomic)."""
    counters = _counters(email, client_ip)
    window = current_app.config["LOGIN_FAILURE_WINDOW_SECONDS"]
    try:
        with get_redis().pipeline(transaction=True) as pipe:
            for counter in counters:
                pipe.incr(counter.key)
                pipe.expire(counter.key, window)
            counts = pipe.execute()[::2]
    except RedisError:
        log.warning("login throttle unavailable; failure not counted", exc_info=True)
        return
    for counter, count in zip(counters, counts, strict=True):
        if count == counter.limit:
            log.warning(
                "sign-in locked after repeated failures",
                extra={"counter": counter.kind, "client_ip": client_ip},
            )


def clear(email: str) -> None:
    """Forget the e-mail's failures (after a successful sign-in)."""
    try:
        get_redis().delete(_email_counter(email).key)
    except RedisError:
        log.warning("login throttle unavailable; failures not cleared", exc_info=True)


def refusal_message(retry_after: int) -> str:
    """The same words whether or not the e-mail belongs to anyone."""
    minutes = math.ceil(retry_after / 60)
    return f"Too many sign-in attempts. Try again in {minutes} minute{'s' if minutes > 1 else ''}."


def _counters(email: str, client_ip: str | None) -> list[_Counter]:
    counters = [_email_counter(email)]
    per_ip_limit = current_app.config["LOGIN_MAX_FAILURES_PER_IP"]
    if client_ip and per_ip_limit:
        counters.append(_Counter("ip", _key("ip", client_ip), per_ip_limit))
    return counters


def _email_counter(email: str) -> _Counter:
    try:
        identity = normalise_email(email)
    except InvalidRequest:  # no account can have it; still counted, as login accepts it
        identity = email.strip().lower()
    return _Counter("email", _key("email", identity), current_app.config["LOGIN_MAX_FAILURES"])


def _key(kind: str, value: str) -> str:
    return f"{KEY_PREFIX}:{kind}:{hashlib.sha256(value.encode()).hexdigest()}"
