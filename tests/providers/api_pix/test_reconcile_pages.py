"""Reconciliation a page at a time: the client hands out `GET /pix` pages with the position of
the next, and the job saves a checkpoint after each, so a page the PSP does not give (an
outage, a long Retry-After) is where the next run resumes the same window, without listing
what it already applied; the mark moves only once the window is done."""

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from app.jobs import api_pix as api_pix_jobs
from app.models.base import utcnow
from app.providers.api_pix import client as client_module
from app.providers.api_pix.client import ListingPosition
from app.providers.api_pix.mapping import cob_body, txid_for
from tests.support import charges
from tests.support.fake_api_pix import RECEIVER_KEY

AMOUNT = 2500


@pytest.fixture
def pages_of_one(monkeypatch):
    monkeypatch.setattr(client_module, "PAGE_SIZE", 1)


@pytest.fixture
def applied(monkeypatch) -> list:
    """Every entry the job hands to the service, in order; the service still applies them."""
    entries = []
    apply_received = api_pix_jobs.api_pix_inbound.apply_received

    def recorded(batch):
        batch = list(batch)
        entries.extend(batch)
        return apply_received(batch)

    monkeypatch.setattr(api_pix_jobs.api_pix_inbound, "apply_received", recorded)
    return entries


def live_charge(api, merchant) -> dict:
    return charges.created(api, merchant.api_key, amount=AMOUNT)


def txid_of(charge: dict) -> str:
    return txid_for(charges.raw(charge["id"]))


def status(api, merchant, charge: dict) -> str:
    return charges.get(api, merchant.api_key, charge["id"]).get_json()["status"]


def three_pix(api, merchant, psp) -> tuple[list[dict], list[dict]]:
    """Two live charges paid, then a Pix on our key with no txid (a static code): one page
    each, in that order."""
    now = datetime.now(UTC)
    paid = [live_charge(api, merchant) for _ in range(3)]
    pix = [
        psp.pay(txid_of(charge), at=now - timedelta(minutes=3 - n)) for n, charge in enumerate(paid)
    ]
    del pix[2]["txid"]
    return paid[:2], pix


def reconcile(app):
    with app.app_context():
        return api_pix_jobs.reconcile_received_pix()


def checkpoint(redis) -> api_pix_jobs.Checkpoint | None:
    raw = redis.get(api_pix_jobs.CHECKPOINT_KEY)
    return None if raw is None else api_pix_jobs.Checkpoint.loads(raw)


def mark(redis) -> datetime | None:
    raw = redis.get(api_pix_jobs.RECONCILED_UNTIL_KEY)
    return None if raw is None else datetime.fromisoformat(raw.decode())


def listed_pages(psp) -> list[tuple[str, str, str]]:
    return [
        (call.args["inicio"], call.args["fim"], call.args["paginacao.paginaAtual"])
        for call in psp.calls("GET", "/pix")
    ]


# The job


def test_a_failed_page_is_where_the_next_run_resumes(
    app, api, merchant, live, redis, pages_of_one, applied
):
    (first, second), pix = three_pix(api, merchant, live)
    live.fail_next(500, after=1)  # GET /pix: page 0 answers, page 1 fails

    assert reconcile(app) == 1

    assert status(api, merchant, first) == "paid"
    assert status(api, merchant, second) == "pending"
    saved = checkpoint(redis)
    assert saved.following == ListingPosition(saved.since, 1)
    assert saved.oldest_failed is None and saved.not_before is None
    assert mark(redis) is None  # the window is not done
    window = listed_pages(live)[0][:2]
    assert [page for *_, page in listed_pages(live)] == ["0", "1"]

    assert reconcile(app) == 2

    assert [page for *_, page in listed_pages(live)] == ["0", "1", "1", "2"]  # not 0 again
    assert {pages[:2] for pages in listed_pages(live)} == {window}
    assert status(api, merchant, second) == "paid"
    assert checkpoint(redis) is None
    assert mark(redis) == saved.until  # the window's end, not the second run's start
    assert [entry.end_to_end_id for entry in applied] == [item["endToEndId"] for item in pix]
    assert applied[2].txid is None  # the service records Pix that are no charge of ours


def test_a_checkpoint_is_saved_after_every_page(app, api, merchant, live, redis, pages_of_one):
    three_pix(api, merchant, live)
    live.fail_next(500, after=2)  # page 2 fails

    assert reconcile(app) == 2

    assert checkpoint(redis).following.page == 2
    assert reconcile(app) == 1
    assert [page for *_, page in listed_pages(live)] == ["0", "1", "2", "2"]


def test_a_long_retry_after_is_respected_by_the_next_runs(
    app, api, merchant, live, redis, pages_of_one, monkeypatch, caplog
):
    (_, second), _ = three_pix(api, merchant, live)
    live.fail_next(429, after=1, retry_after="120")
    started = utcnow()

    assert reconcile(app) == 1

    (stopped,) = [r for r in caplog.records if r.getMessage().startswith("reconciliation stopped")]
    assert stopped.levelno == logging.WARNING
    assert (stopped.status, stopped.retry_after_seconds, stopped.page) == (429, 120, 1)
    not_before = checkpoint(redis).not_before
    assert started + timedelta(seconds=119) <= not_before <= utcnow() + timedelta(seconds=120)

    assert reconcile(app) == 0  # too soon: the PSP is not asked
    assert len(live.calls("GET", "/pix")) == 2

    monkeypatch.setattr(api_pix_jobs, "utcnow", lambda: not_before + timedelta(seconds=1))
    assert reconcile(app) == 2
    assert status(api, merchant, second) == "paid"
    assert checkpoint(redis) is None


def test_the_oldest_failure_is_kept_across_the_checkpoint(
    app, api, merchant, live, redis, pages_of_one, monkeypatch
):
    _, pix = three_pix(api, merchant, live)
    apply_received = api_pix_jobs.api_pix_inbound.apply_received

    def failing_the_first(entries):
        entries = list(entries)
        if entries[0].end_to_end_id == pix[0]["endToEndId"]:
            raise RuntimeError("a bug applying this Pix")
        return apply_received(entries)

    monkeypatch.setattr(api_pix_jobs.api_pix_inbound, "apply_received", failing_the_first)
    live.fail_next(500, after=1)
    reconcile(app)
    assert checkpoint(redis).oldest_failed == datetime.fromisoformat(pix[0]["horario"])

    reconcile(app)

    assert mark(redis) == datetime.fromisoformat(pix[0]["horario"])


def test_a_failure_on_the_first_page_keeps_the_window(app, live, redis):
    live.fail_next(503, retry_after="30")

    assert reconcile(app) == 0

    saved = checkpoint(redis)
    assert saved.following is None and saved.not_before is not None
    assert mark(redis) is None


def test_an_unreadable_checkpoint_is_dropped_for_the_mark(app, live, redis, caplog):
    redis.set(api_pix_jobs.CHECKPOINT_KEY, json.dumps({"since": "yesterday"}))

    assert reconcile(app) == 0

    assert "unreadable reconciliation checkpoint" in caplog.text
    assert checkpoint(redis) is None and mark(redis) is not None


# The client's pages


def paid(psp, client, minutes_ago: list[int]) -> datetime:
    txid = txid_for("0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d")
    client.put_cob(txid, cob_body(1000, 3600, None, None, receiver_key=RECEIVER_KEY))
    now = datetime.now(UTC)
    for minutes in minutes_ago:
        psp.pay(txid, at=now - timedelta(minutes=minutes))
    return now


def test_pages_come_with_the_position_of_the_next(psp, client, pages_of_one):
    now = paid(psp, client, [3, 2, 1])
    start = now - timedelta(hours=1)

    pages = list(client.iter_pix_pages(start, now))

    assert [len(items) for items, _ in pages] == [1, 1, 1]
    assert [following for _, following in pages] == [
        ListingPosition(start, 1),
        ListingPosition(start, 2),
        None,
    ]


def test_resume_starts_at_the_position_given(psp, client, pages_of_one):
    now = paid(psp, client, [3, 2, 1])
    start = now - timedelta(hours=1)
    everything = [items[0]["endToEndId"] for items, _ in client.iter_pix_pages(start, now)]
    asked = len(psp.calls("GET", "/pix"))

    resumed = client.iter_pix_pages(start, now, resume=ListingPosition(start, 2))

    assert [items[0]["endToEndId"] for items, _ in resumed] == everything[2:]
    assert [call.args["paginacao.paginaAtual"] for call in psp.calls("GET", "/pix")[asked:]] == [
        "2"
    ]


def test_positions_cross_spans(psp, client):
    now = paid(psp, client, [60 * 30, 1])  # 30 hours ago and a minute ago
    start = now - timedelta(hours=36)

    pages = list(client.iter_pix_pages(start, now))

    second_span = start + client_module.MAX_LIST_SPAN
    assert [following for _, following in pages] == [ListingPosition(second_span, 0), None]
    resumed = list(client.iter_pix_pages(start, now, resume=ListingPosition(second_span, 0)))
    assert [len(items) for items, _ in resumed] == [1]


def test_a_position_outside_the_window_is_refused(client):
    now = datetime.now(UTC)

    with pytest.raises(ValueError, match="outside"):
        next(client.iter_pix_pages(now - timedelta(hours=1), now, resume=ListingPosition(now, 0)))


def test_a_page_that_is_not_a_list_is_unavailable(psp, client, monkeypatch):
    monkeypatch.setattr(client, "_request", lambda *args, **kwargs: {"pix": {"not": "a list"}})
    now = datetime.now(UTC)

    with pytest.raises(client_module.ApiPixUnavailable, match="no list"):
        list(client.iter_pix(now - timedelta(hours=1), now))
