"""Reconciliation with the live PSP, run by `rq cron` every API_PIX_RECONCILE_SECONDS when the
live provider is configured (API_PIX_BASE_URL set): a webhook the PSP never delivered (our
outage, theirs, a lost call) is caught by listing what it received (`GET /pix`).

The window runs from a mark kept in Redis, less an overlap for Pix booked late at the PSP, to
now; the client asks for it in spans the PSP accepts, a page at a time. Each Pix is applied
by the webhook's own function in its own transaction, so it is idempotent with the webhook
and one failure does not hold up the others. The mark then moves to now, or to the oldest Pix
that failed (so it is listed again next time, and the later ones with it) but never further
back than RETRY_HORIZON: a Pix still failing after that is logged as an error for operations
and no longer holds the window open.

When the mark is lost (first run, Redis emptied or replaced) the window is the last 24 hours
(FIRST_WINDOW): a Pix received earlier whose webhook never came is not caught by this job.
"""

import logging
from datetime import datetime, timedelta

from app.extensions import db, get_redis
from app.models.base import utcnow
from app.providers import api_pix_client, live_pix_configured
from app.providers.api_pix.mapping import PixEntry, parse_pix
from app.services import api_pix_inbound

log = logging.getLogger(__name__)

RECONCILED_UNTIL_KEY = "acme_api_pix_reconciled_until"
OVERLAP = timedelta(minutes=10)
FIRST_WINDOW = timedelta(hours=24)
RETRY_HORIZON = timedelta(hours=24)


def reconcile_received_pix() -> int | None:
    """Apply every Pix with a txid the PSP received in the window; returns how many it
    listed, or None when no live provider is configured."""
    if not live_pix_configured():
        return None
    redis = get_redis()
    until = utcnow()
    since = _window_start(redis.get(RECONCILED_UNTIL_KEY), until)
    listed = 0
    failed: list[PixEntry] = []
    for item in api_pix_client().iter_pix(since, until):
        listed += 1
        try:
            entry = parse_pix(item)
        except ValueError as error:  # it will not parse next time either
            log.error("the PSP listed a Pix we cannot read; skipped", extra={"error": str(error)})
            continue
        if entry.txid is None:
            continue  # not paid through a charge (a static code or a plain key)
        try:
            api_pix_inbound.apply_received([entry])
            db.session.commit()
        except Exception:
            db.session.rollback()
            failed.append(entry)
            log.exception(
                "received Pix not applied; retried next run",
                extra={"end_to_end_id": entry.end_to_end_id},
            )
    redis.set(RECONCILED_UNTIL_KEY, _next_mark(failed, until).isoformat())
    return listed


def _window_start(mark: bytes | None, until: datetime) -> datetime:
    if mark is None:
        return until - FIRST_WINDOW
    return min(datetime.fromisoformat(mark.decode()) - OVERLAP, until)


def _next_mark(failed: list[PixEntry], until: datetime) -> datetime:
    """Now, or the oldest failed Pix's time (the window starts an overlap before it), but no
    further back than RETRY_HORIZON."""
    horizon = until - RETRY_HORIZON
    given_up = [entry.end_to_end_id for entry in failed if entry.received_at < horizon]
    if given_up:
        log.error(
            "received Pix failing for longer than the retry horizon; reconciliation no longer "
            "retries them, operations must apply them",
            extra={"end_to_end_ids": given_up},
        )
    oldest = min((entry.received_at for entry in failed), default=until)
    return min(max(oldest, horizon), until)
