"""Reconciliation with the live PSP, run by `rq cron` every API_PIX_RECONCILE_SECONDS when the
live provider is configured (API_PIX_BASE_URL set): a webhook the PSP never delivered (our
outage, theirs, a lost call) is caught by listing what it received (`GET /pix`).

The window runs from the last successful run, less an overlap for Pix booked late at the
PSP, to now; without a mark (first run, Redis emptied) it is the last 24 hours. Each Pix is
applied by the webhook's own function in its own transaction, so it is idempotent with the
webhook and one failure does not hold up the others; the mark moves only when all went
through, so a failed Pix is listed again next time.
"""

import logging
from datetime import datetime, timedelta

from app.extensions import db, get_redis
from app.models.base import utcnow
from app.providers import api_pix_client, live_pix_configured
from app.providers.api_pix.mapping import parse_pix
from app.services import api_pix_inbound

log = logging.getLogger(__name__)

RECONCILED_UNTIL_KEY = "acme_api_pix_reconciled_until"
OVERLAP = timedelta(minutes=10)
FIRST_WINDOW = timedelta(hours=24)


def reconcile_received_pix() -> int | None:
    """Apply every Pix with a txid the PSP received in the window; returns how many it
    listed, or None when no live provider is configured."""
    if not live_pix_configured():
        return None
    redis = get_redis()
    until = utcnow()
    since = _window_start(redis.get(RECONCILED_UNTIL_KEY), until)
    received = api_pix_client().list_pix(since, until)
    failed = 0
    for item in received:
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
            failed += 1
            log.exception(
                "received Pix not applied; retried next run",
                extra={"end_to_end_id": entry.end_to_end_id},
            )
    if not failed:
        redis.set(RECONCILED_UNTIL_KEY, until.isoformat())
    return len(received)


def _window_start(mark: bytes | None, until: datetime) -> datetime:
    if mark is None:
        return until - FIRST_WINDOW
    return min(datetime.fromisoformat(mark.decode()) - OVERLAP, until)
