"""Payment finalisation: the job enqueued when a payment is created, and the sweep that
finalises any whose job never ran (Redis was down at the commit) or whose provider did not
answer. Finalising is a no-op for anything no longer PENDING, so a job that runs twice, or
races the sweep, is harmless. Apart from these, the periodic fold of the payments' daily
totals, which the stats read.

A payment the provider failed to finalise is asked again with backoff: 10 s, then twice as
long after each further failure, at most hourly. The wait lives in Redis (one key waits out
the delay, another counts the failures for a day); without Redis the sweep simply retries.
"""

import logging
from datetime import timedelta

from redis.exceptions import RedisError

from app.extensions import db, get_redis
from app.jobs import sweep
from app.retries import backoff
from app.services.transactions import payment_finalisation, payment_totals

log = logging.getLogger(__name__)

FIRST_WAIT = timedelta(seconds=10)
MAX_WAIT_SECONDS = 3600
FAILURES_KEPT_SECONDS = 86_400
WAIT_KEY = "acme_finalise_wait:{}"
FAILURES_KEY = "acme_finalise_failures:{}"


def finalise_payment(transaction_id: str) -> str:
    """Ask the provider for the payment's instructions; returns the status it ends in."""
    payment = payment_finalisation.finalise(transaction_id)
    db.session.commit()
    return str(payment.status)


def fold_payment_totals() -> int:
    """Fold the pending changes of the daily payment totals, batch after batch, so the
    stats read few rows; returns how many changes were folded."""
    folded = 0
    while (batch := payment_totals.fold_changes()) == payment_totals.FOLD_BATCH:
        folded += batch
    return folded + batch


def sweep_payments() -> int:
    """Finalise payments left PENDING past their job and past their backoff; one failure
    never holds up the rest. Returns how many it tried."""
    due = [
        transaction_id
        for transaction_id in payment_finalisation.unfinalised()
        if not _waiting(transaction_id)
    ]
    sweep(
        due,
        finalise_payment,
        log=log,
        failure="payment finalisation failed; retried later",
        details=lambda transaction_id: {
            "id": transaction_id,
            "retry_in_seconds": _back_off(transaction_id),
        },
    )
    return len(due)


def finalise_wait(failures: int) -> int:
    """Seconds before the next try, after `failures` failed ones; unjittered, as the sweep
    runs on a fixed period that jitter would not spread."""
    wait = backoff(failures - 1, FIRST_WAIT, timedelta(seconds=MAX_WAIT_SECONDS), jitter=0)
    return int(wait.total_seconds())


def _waiting(transaction_id: str) -> bool:
    try:
        return bool(get_redis().exists(WAIT_KEY.format(transaction_id)))
    except RedisError:
        return False


def _back_off(transaction_id: str) -> int | None:
    """Count the failure and start its wait; None when Redis is down (no backoff then)."""
    try:
        redis = get_redis()
        failures = redis.incr(FAILURES_KEY.format(transaction_id))
        redis.expire(FAILURES_KEY.format(transaction_id), FAILURES_KEPT_SECONDS)
        wait = finalise_wait(failures)
        redis.set(WAIT_KEY.format(transaction_id), 1, ex=wait)
    except RedisError:
        return None
    return wait
