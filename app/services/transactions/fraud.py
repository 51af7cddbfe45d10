"""Velocity guard: how many live charges a payer, or an account, may have open at once.

A live charge is one still awaiting payment and not yet past its expiry, created inside the
window (`FRAUD_VELOCITY_WINDOW_SECONDS`); expired, cancelled, failed and paid charges do not
count. Over a limit the request is refused with 403 and a `fraud.` code.

The payer limit is exact: on PostgreSQL, requests for the same payer are serialised by a
transaction-level advisory lock held until commit, so two cannot both take the last slot.
The account limit is a coarse ceiling counted without a lock (it may be passed by the number
of requests in flight at that instant), so one merchant's charges never queue behind each
other. Its count is a statement of its own (`models.pooled`): straight on the pool when no
transaction is open yet, as in an API request, and in the open one otherwise. Either way it
counts the committed charges, the request having written none yet.

That count reads one index entry per live charge, so a busy account paid for it on every
charge (issue 22). A bound in Redis spares it while the account is clearly below its limit:
seeded with the count (plus the charge being made) and the window as its lifetime, then one
more for every charge or payment asked for (each passes here), and brought back to the count
whenever it passes the limit. Charges leave the live set and do not come back (but for a
payment finalised after its provisional deadline: docs/decisions.md), so the bound does not
fall below the live charges; while it is at most the limit, the count could not refuse. A
missing bound (expired, or lost with Redis) is seeded from the count, never from zero, and
with Redis unreachable every charge is counted.
"""

import logging
from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app
from redis.exceptions import RedisError

from app.errors import PermissionDenied
from app.extensions import db, get_redis
from app.models import KeyMode, Transaction, pooled
from app.models.transaction import OPEN_CHARGE_CONDITION
from app.services import redis_counters

log = logging.getLogger(__name__)

CUSTOMER_VELOCITY = "fraud.customer_velocity_exceeded"
ACCOUNT_VELOCITY = "fraud.account_velocity_exceeded"


def check_velocity(
    account_id: str, mode: KeyMode, payer_document: str | None, now: datetime
) -> None:
    """Refuse a new charge that would exceed the payer's or the account's limit."""
    config = current_app.config
    window = {
        "account_id": account_id,
        "mode": mode,
        "now": now,
        "since": now - timedelta(seconds=config["FRAUD_VELOCITY_WINDOW_SECONDS"]),
    }
    if payer_document:
        _serialise_payer(account_id, mode, payer_document)
        limit = config["FRAUD_MAX_LIVE_CHARGES_PER_CUSTOMER"]
        payer_window = {"limit": limit, "payer_document": payer_document, **window}
        if db.session.scalar(PAYER_COUNT, payer_window) >= limit:
            raise PermissionDenied(
                f"This payer already has {limit} open charges; wait for them to be paid or to "
                "expire.",
                code=CUSTOMER_VELOCITY,
            )
    limit = config["FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT"]
    key = bound_key(account_id, mode)
    try:
        bound = redis_counters.add_if_kept(get_redis(), key)
    except RedisError:
        log.warning("velocity bound unreadable; counting live charges", exc_info=True)
        _refuse_at_account_limit(limit, window)
        return
    if bound is None or bound > limit:
        live = _refuse_at_account_limit(limit, window)
        _keep_bound(key, bound, live + 1, config["FRAUD_VELOCITY_WINDOW_SECONDS"])


def bound_key(account_id: str, mode: KeyMode) -> str:
    """The Redis key of the account's bound on its live charges (one per mode)."""
    return f"acme:velocity-bound:{account_id}:{mode.value}"


def _refuse_at_account_limit(limit: int, window: dict) -> int:
    """The account's live charges in the window, counted; refused when at the limit."""
    (live,) = pooled.first_row(ACCOUNT_COUNT, {"limit": limit, **window})
    if live >= limit:
        raise PermissionDenied(
            f"The account already has {limit} open charges in the velocity window.",
            code=ACCOUNT_VELOCITY,
        )
    return live


def _keep_bound(key: str, bound: int | None, counted: int, window_seconds: int) -> None:
    """Seed a missing bound with `counted` (the live charges and this one), or bring an
    existing one back to it by the difference, so the charges other requests counted
    meanwhile stay counted (if it expired meanwhile, it stays missing). Not kept, the next
    charge counts again: never fewer."""
    try:
        if bound is None:
            get_redis().set(key, counted, ex=window_seconds, nx=True)
        else:
            redis_counters.add_if_kept(get_redis(), key, counted - bound)
    except RedisError:
        log.warning("velocity bound not kept; the next charge counts", exc_info=True)


def _live_charges(*conditions) -> sa.Select:
    """How many live charges match, counting no further than the `limit` parameter (all the
    guard needs to know). Built once with its values as parameters, so each charge creation
    reuses the compiled statement; the account's count reads `ix_transactions_open`."""
    live = (
        sa.select(sa.literal(1))
        .select_from(Transaction)
        .where(
            Transaction.account_id == sa.bindparam("account_id"),
            Transaction.mode == sa.bindparam("mode"),
            OPEN_CHARGE_CONDITION,  # literally the index's, so even a generic plan may use it
            Transaction.expires_at > sa.bindparam("now"),
            Transaction.created_at >= sa.bindparam("since"),
            *conditions,
        )
    )
    return sa.select(sa.func.count()).select_from(
        live.limit(sa.bindparam("limit", type_=sa.Integer)).subquery()
    )


ACCOUNT_COUNT = _live_charges()
PAYER_COUNT = _live_charges(Transaction.payer_document == sa.bindparam("payer_document"))


def _serialise_payer(account_id: str, mode: KeyMode, payer_document: str) -> None:
    """Hold a lock on (account, mode, payer) until commit; SQLite serialises writers anyway."""
    if db.session.get_bind().dialect.name != "postgresql":
        return
    key = f"velocity:{account_id}:{mode}:{payer_document}"
    db.session.execute(
        sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key}
    )
