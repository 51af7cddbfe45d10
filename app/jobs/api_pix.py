"""Reconciliation with the live PSP, run by `rq cron` every API_PIX_RECONCILE_SECONDS when the
live provider is configured (API_PIX_BASE_URL set): a webhook the PSP never delivered (our
outage, theirs, a lost call) is caught by listing what it received (`GET /pix`), and a cob the
PSP removed on its own (`REMOVIDA_PELO_PSP`, which no webhook reports) by listing those
(`GET /cob?status=REMOVIDA_PELO_PSP`).

The window runs from a mark kept in Redis, less an overlap for Pix booked late at the PSP, to
now; the client asks for it in spans the PSP accepts, a page at a time. Each Pix is applied
by the webhook's own function in its own transaction, so it is idempotent with the webhook
and one failure does not hold up the others. The mark then moves to now, or to the oldest Pix
that failed (so it is listed again next time, and the later ones with it) but never further
back than RETRY_HORIZON: a Pix still failing after that is logged as an error for operations
and no longer holds the window open.

When the mark is lost (first run, Redis emptied or replaced) the window is the last 24 hours
(FIRST_WINDOW): a Pix received earlier whose webhook never came is not caught by this job.

Removed cobs are listed after the Pix, so a Pix paid just before the removal is credited
first. `GET /cob` filters by creation, not by change, so the cob window is always the life of
the longest charge (`charges.MAX_EXPIRES_IN`) plus the overlap, with no mark: every charge
that can still be pending is covered. A removed cob (`mapping.COB_STATUS` → CANCELLED) cancels
our charge if it is still awaiting payment, as a merchant's cancel does
(`payments.mark_cancelled`, same events); one past its expiry is expired instead, and one
already paid, expired or cancelled is left alone and logged. A `CONCLUIDA` cob is never acted
on: money is credited only from the received Pix (`GET /pix` or the webhook), which carries
the end-to-end id, amount and payer that `pix_payments.receive` checks; a cob's status carries
none of them.
"""

import logging
from datetime import datetime, timedelta

from app.extensions import db, get_redis
from app.models import TransactionStatus
from app.models.base import utcnow
from app.providers import api_pix_client, live_pix_configured
from app.providers.api_pix.mapping import COB_STATUS, REMOVED_BY_PSP, PixEntry, parse_pix
from app.services import api_pix_inbound, charges, payments, transactions

log = logging.getLogger(__name__)

RECONCILED_UNTIL_KEY = "acme_api_pix_reconciled_until"
OVERLAP = timedelta(minutes=10)
FIRST_WINDOW = timedelta(hours=24)
RETRY_HORIZON = timedelta(hours=24)
COB_WINDOW = timedelta(seconds=charges.MAX_EXPIRES_IN) + OVERLAP


def reconcile_received_pix() -> int | None:
    """Apply every Pix with a txid the PSP received in the window, then the cobs it removed;
    returns how many Pix it listed, or None when no live provider is configured."""
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
    _cancel_removed_cobs(until)
    return listed


def _cancel_removed_cobs(until: datetime) -> None:
    """Each cob the PSP removed, applied in its own transaction (see the module's doc)."""
    for cob in api_pix_client().iter_cobs(until - COB_WINDOW, until, status=REMOVED_BY_PSP):
        txid = cob.get("txid")
        if COB_STATUS.get(cob.get("status")) is not TransactionStatus.CANCELLED:
            log.warning(
                "the PSP listed a cob not removed when asked for removed ones; ignored",
                extra={"txid": txid, "cob_status": cob.get("status")},
            )
            continue
        try:
            _cancel_charge_of_removed_cob(txid)
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception("removed cob not applied; retried next run", extra={"txid": txid})


def _cancel_charge_of_removed_cob(txid: object) -> None:
    charge_id = api_pix_inbound.live_charge_id(txid) if isinstance(txid, str) else None
    if charge_id is None:
        log.warning("the PSP removed a cob that matches no live charge", extra={"txid": txid})
        return
    charge = charges.expire_if_due(transactions.lock(charge_id))
    if charge.status not in transactions.AWAITING_PAYMENT:
        log.info(
            "the PSP removed the cob of a charge no longer awaiting payment; left alone",
            extra={"charge_id": charge.id, "status": str(charge.status)},
        )
        return
    payments.mark_cancelled(charge, f"The PSP removed the charge's Pix code ({REMOVED_BY_PSP}).")
    log.warning(
        "the PSP removed a pending charge's cob; charge cancelled", extra={"charge_id": charge.id}
    )


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
