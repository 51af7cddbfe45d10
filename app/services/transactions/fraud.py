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
"""

from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app

from app.errors import PermissionDenied
from app.extensions import db
from app.models import KeyMode, Transaction, pooled
from app.models.transaction import OPEN_CHARGE_CONDITION

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
    (live,) = pooled.first_row(ACCOUNT_COUNT, {"limit": limit, **window})
    if live >= limit:
        raise PermissionDenied(
            f"The account already has {limit} open charges in the velocity window.",
            code=ACCOUNT_VELOCITY,
        )


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
