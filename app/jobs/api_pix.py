"""Reconciliation with the live PSP, run by `rq cron` every API_PIX_RECONCILE_SECONDS when the
live provider is configured (API_PIX_BASE_URL set): a webhook the PSP never delivered (our
outage, theirs, a lost call) is caught by listing what it received (`GET /pix`), and a cob the
PSP removed on its own (`REMOVIDA_PELO_PSP`, which no webhook reports) by listing those
(`GET /cob?status=REMOVIDA_PELO_PSP`).

The window runs from a mark kept in Redis, less an overlap for Pix booked late at the PSP, to
now; the client asks for it in spans the PSP accepts, a page at a time. Each Pix, with a txid
or not (one that belongs to no charge of ours is the service's to record), is applied by the
webhook's own function in its own transaction, so it is idempotent with the webhook and one
failure does not hold up the others. The mark then moves to the window's end, or to the
oldest Pix that failed (so it is listed again next time, and the later ones with it) but
never further back than RETRY_HORIZON: a Pix still failing after that is logged as an error
for operations and no longer holds the window open.

After every page but the last, a checkpoint is saved in Redis (`Checkpoint`: the window, the
next page's position, the oldest Pix failed so far). A page the PSP does not give (an outage,
or throttling whose Retry-After is longer than the client waits) ends the run there, logged
with that Retry-After, which the next run respects; the next run resumes the same window at
that page instead of listing it all again, then moves the mark as above and starts afresh.

When the mark is lost (first run, Redis emptied or replaced) the window is the last 24 hours
(FIRST_WINDOW): a Pix received earlier whose webhook never came is not caught by this job.

Removed cobs are listed after the Pix, so a Pix paid just before the removal is credited
first. `GET /cob` filters by creation, not by change, so the cob window is always the life of
the longest charge (`charges.MAX_EXPIRES_IN`) plus the overlap, with no mark: every charge
that can still be pending is covered. A cobv (a charge with a due date) may stay payable for
years, so `GET /cobv` is listed only around the creation of each live one still awaiting
payment (`cobv_spans`: the overlap either side, stretches merged), and not at all when there
is none. A removed cob or cobv (`mapping.COB_STATUS` → CANCELLED) cancels our charge if it is
still awaiting payment, as a merchant's cancel does (`payments.mark_cancelled`, same events);
one past its expiry is expired instead, and one already paid, expired or cancelled is left
alone and logged. A `CONCLUIDA` cob is never acted on: money is credited only from the
received Pix (`GET /pix` or the webhook), which carries the end-to-end id, amount and payer
that `pix_payments.receive` checks; a cob's status carries none of them.
"""

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from redis import Redis

from app.extensions import db, get_redis
from app.jobs import sweep
from app.models.base import utcnow
from app.providers import api_pix_client, live_pix_configured
from app.providers.api_pix.client import ListingPosition
from app.providers.api_pix.mapping import COB, COBV, REMOVED_BY_PSP, PixEntry
from app.providers.api_pix.problems import ApiPixUnavailable
from app.services import api_pix_inbound
from app.services.transactions import charges

log = logging.getLogger(__name__)

RECONCILED_UNTIL_KEY = "acme_api_pix_reconciled_until"
CHECKPOINT_KEY = "acme_api_pix_reconcile_checkpoint"
OVERLAP = timedelta(minutes=10)
FIRST_WINDOW = timedelta(hours=24)
RETRY_HORIZON = timedelta(hours=24)
COB_WINDOW = timedelta(seconds=charges.MAX_EXPIRES_IN) + OVERLAP


@dataclass
class Checkpoint:
    """How far the listing of the window `since`..`until` got: `following` is the next page
    (None: the first), `oldest_failed` the time of the oldest Pix not applied so far, and
    `not_before` when the PSP asked us to come back (its Retry-After)."""

    since: datetime
    until: datetime
    following: ListingPosition | None = None
    oldest_failed: datetime | None = None
    not_before: datetime | None = None

    def dumps(self) -> str:
        following = self.following
        return json.dumps(
            {
                "since": self.since.isoformat(),
                "until": self.until.isoformat(),
                "following": None
                if following is None
                else [following.span_start.isoformat(), following.page],
                "oldest_failed": _iso(self.oldest_failed),
                "not_before": _iso(self.not_before),
            }
        )

    @classmethod
    def loads(cls, raw: bytes) -> "Checkpoint":
        saved = json.loads(raw)
        following = saved["following"]
        return cls(
            since=datetime.fromisoformat(saved["since"]),
            until=datetime.fromisoformat(saved["until"]),
            following=None
            if following is None
            else ListingPosition(datetime.fromisoformat(following[0]), int(following[1])),
            oldest_failed=_moment(saved["oldest_failed"]),
            not_before=_moment(saved["not_before"]),
        )


def reconcile_received_pix() -> int | None:
    """Apply every Pix the PSP received in the window, then the cobs it removed; returns how
    many Pix it listed, or None when no live provider is configured."""
    if not live_pix_configured():
        return None
    redis = get_redis()
    now = utcnow()
    checkpoint = _saved_checkpoint(redis.get(CHECKPOINT_KEY)) or Checkpoint(
        since=_window_start(redis.get(RECONCILED_UNTIL_KEY), now), until=now
    )
    if checkpoint.not_before is not None and now < checkpoint.not_before:
        log.info(
            "reconciliation waits for the PSP's Retry-After",
            extra={"not_before": checkpoint.not_before.isoformat()},
        )
        return 0
    listed = 0
    pages = api_pix_client().iter_pix_pages(
        checkpoint.since, checkpoint.until, resume=checkpoint.following
    )
    try:
        for items, following in pages:
            listed += len(items)
            _apply_page(items, checkpoint)
            if following is not None:
                checkpoint.following = following
                redis.set(CHECKPOINT_KEY, checkpoint.dumps())
    except ApiPixUnavailable as error:
        _stop_at_checkpoint(redis, checkpoint, error, now)
        return listed
    redis.set(RECONCILED_UNTIL_KEY, _next_mark(checkpoint).isoformat())
    redis.delete(CHECKPOINT_KEY)
    _cancel_removed_cobs(checkpoint.until)
    return listed


def _saved_checkpoint(raw: bytes | None) -> Checkpoint | None:
    """The checkpoint of an unfinished run; one this release cannot read is dropped (the
    window is then listed again from the mark, which applying makes harmless)."""
    if raw is None:
        return None
    try:
        return Checkpoint.loads(raw)
    except (ValueError, KeyError, TypeError, IndexError):
        log.warning("unreadable reconciliation checkpoint; the window is listed from the mark")
        return None


def _apply_page(items: list[dict], checkpoint: Checkpoint) -> None:
    """Each listed Pix applied in its own transaction (see the module's doc); the oldest that
    failed is kept in the checkpoint."""
    failed: list[PixEntry] = []
    for item in items:
        entry = None
        try:
            entry = api_pix_inbound.read_listed(item)  # None: unreadable, a notice already
            if entry is not None:
                api_pix_inbound.apply_received([entry])
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception(
                "received Pix not applied; retried next run",
                extra={"end_to_end_id": None if entry is None else entry.end_to_end_id},
            )
            if entry is not None:
                failed.append(entry)
    _log_given_up(failed, checkpoint.until)
    failed_at = [entry.received_at for entry in failed]
    if checkpoint.oldest_failed is not None:
        failed_at.append(checkpoint.oldest_failed)
    checkpoint.oldest_failed = min(failed_at, default=None)


def _stop_at_checkpoint(
    redis: Redis, checkpoint: Checkpoint, error: ApiPixUnavailable, now: datetime
) -> None:
    """The PSP did not give the next page: keep the checkpoint (with its Retry-After) for the
    next run to resume from."""
    wait = error.retry_after
    checkpoint.not_before = None if wait is None else now + wait
    redis.set(CHECKPOINT_KEY, checkpoint.dumps())
    following = checkpoint.following
    log.warning(
        "reconciliation stopped: the PSP did not give a page; the next run resumes there",
        extra={
            "code": error.code,
            "status": error.status,
            "correlation_id": error.correlation_id,
            "retry_after_seconds": None if wait is None else wait.total_seconds(),
            "since": checkpoint.since.isoformat(),
            "until": checkpoint.until.isoformat(),
            "span_start": None if following is None else following.span_start.isoformat(),
            "page": None if following is None else following.page,
        },
    )


def _cancel_removed_cobs(until: datetime) -> None:
    """Each cob, then each cobv, the PSP removed, applied in its own transaction (see the
    module's doc)."""
    windows = [(COB, until - COB_WINDOW, until)]
    windows += [(COBV, *span) for span in cobv_spans(api_pix_inbound.awaited_cobv_creation_times())]
    for kind, since, to in windows:
        sweep(
            api_pix_client().iter_cobs(since, to, status=REMOVED_BY_PSP, kind=kind),
            api_pix_inbound.apply_removed_cob,
            log=log,
            failure="removed cob not applied; retried next run",
            details=lambda cob: {"txid": cob.get("txid")},
        )


def cobv_spans(created: list[datetime]) -> list[tuple[datetime, datetime]]:
    """The listing spans that cover these creation times (in order), each within the
    overlap of one and merged when they meet: one request per stretch of days that holds an
    awaited cobv, however old, instead of one per day since the oldest."""
    spans: list[tuple[datetime, datetime]] = []
    for moment in created:
        start, end = moment - OVERLAP, moment + OVERLAP
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def _window_start(mark: bytes | None, until: datetime) -> datetime:
    if mark is None:
        return until - FIRST_WINDOW
    return min(datetime.fromisoformat(mark.decode()) - OVERLAP, until)


def _log_given_up(failed: list[PixEntry], until: datetime) -> None:
    given_up = [
        entry.end_to_end_id for entry in failed if entry.received_at < until - RETRY_HORIZON
    ]
    if given_up:
        log.error(
            "received Pix failing for longer than the retry horizon; reconciliation no longer "
            "retries them, operations must apply them",
            extra={"end_to_end_ids": given_up},
        )


def _next_mark(checkpoint: Checkpoint) -> datetime:
    """The window's end, or the oldest failed Pix's time (the window starts an overlap before
    it), but no further back than RETRY_HORIZON."""
    until = checkpoint.until
    oldest = checkpoint.oldest_failed or until
    return min(max(oldest, until - RETRY_HORIZON), until)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _moment(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)
