"""The webhooks pages: endpoints (add with the secret shown once, edit, enable and disable,
rotate, delete, recover), the delivery log with its filters and CSV export, one delivery with
resend, the failing-endpoint warnings, and who may do what."""

import csv
import html
import io
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from rq import SimpleWorker

from app.business_days import SAO_PAULO
from app.dashboard import webhook_deliveries as webhook_pages
from app.dashboard.forms.webhooks import EVENT_GROUPS
from app.extensions import WEBHOOK_QUEUE, db, get_queue
from app.formats import event_catalog
from app.jobs import webhooks as webhook_jobs
from app.models import EndpointStatus, KeyMode, Role, WebhookDelivery, WebhookEndpoint
from app.services import secrets_box
from app.services.events import record_event
from app.services.webhooks import endpoints as webhook_endpoints
from app.services.webhooks import log as delivery_log
from tests.support import factories
from tests.support.charges import created
from tests.support.dashboard import post_form, sign_in
from tests.support.http import count_rows

PAGE = "/dashboard/webhooks"
LOG = "/dashboard/webhooks/deliveries"
CSV_URL = f"{LOG}/export.csv"
CSV_HEADER = [
    "id",
    "created_at",
    "event_type",
    "event_id",
    "endpoint_id",
    "endpoint_url",
    "status",
    "attempts",
    "max_attempts",
    "last_status_code",
    "last_error",
    "last_attempt_at",
    "next_retry_at",
    "delivered_at",
    "resent_from_id",
]
SECRET = re.compile(r'value="([0-9a-f]{64})"')
UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture
def api_key(app, owner):
    return factories.make_api_key(app, owner.account_id)


def _text(response) -> str:
    """The page as read: entities decoded, addresses without their line-break hints."""
    return html.unescape(response.get_data(as_text=True)).replace("<wbr>", "")


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def _csv_ids(client, query: str = "") -> list[str]:
    return [row[0] for row in _csv(client.get(f"{CSV_URL}{query}"))[1:]]


def _listed_ids(app, account_id: str, mode: KeyMode = KeyMode.TEST, **filters) -> list[str]:
    """The log's ids in the order its pages show them."""
    with app.app_context():
        rows, _ = delivery_log.list_deliveries(account_id, mode, limit=1_000, **filters)
        return [row.id for row in rows]


def _live_delivery(app, account_id: str) -> str:
    """A live event relayed to a live endpoint stored as is (a live address must resolve to
    a public one, which the tests cannot count on)."""
    with app.app_context():
        db.session.add(
            WebhookEndpoint(
                account_id=account_id,
                mode=KeyMode.LIVE,
                url="https://hooks.example.com/live",
                events=["charge.created"],
                status=EndpointStatus.ACTIVE,
                secret_ciphertext=secrets_box.encrypt("0" * 64),
            )
        )
        record_event(account_id, KeyMode.LIVE, "charge.created", {"object": {"id": "ch_live"}})
        db.session.commit()
        webhook_jobs.relay_events()
    (delivery_id,) = _listed_ids(app, account_id, KeyMode.LIVE)
    return delivery_id


def _add(client, url: str, events=("charge.created",), path: str = PAGE):
    """Submit the "Add endpoint" form shown on `path`."""
    return post_form(client, path, path, {"url": url, "events": list(events)})


def _added(app, client, url: str, events=("charge.created",)) -> str:
    assert _add(client, url, events).status_code == 201
    return _endpoints(app)[-1].id


def _endpoints(app) -> list[WebhookEndpoint]:
    with app.app_context():
        return db.session.scalars(
            sa.select(WebhookEndpoint).order_by(WebhookEndpoint.created_at)
        ).all()


def _deliveries(app, **filters) -> list[WebhookDelivery]:
    with app.app_context():
        return db.session.scalars(
            sa.select(WebhookDelivery).filter_by(**filters).order_by(WebhookDelivery.created_at)
        ).all()


def _secret(app, endpoint_id: str) -> str:
    with app.app_context():
        endpoint = db.session.get(WebhookEndpoint, endpoint_id)
        return secrets_box.decrypt(endpoint.secret_ciphertext)


def _run_worker(app, redis) -> None:
    with app.app_context():
        SimpleWorker([get_queue(WEBHOOK_QUEUE)], connection=redis).work(burst=True)


def _relayed(app, client, api_key, charges: int = 1) -> None:
    """Charges made through the API, their events turned into deliveries (nothing sent)."""
    for _ in range(charges):
        created(client, api_key)
    with app.app_context():
        webhook_jobs.relay_events()


def _set_deliveries(app, **values) -> None:
    with app.app_context():
        db.session.execute(sa.update(WebhookDelivery).values(**values))
        db.session.commit()


def _local_minute(moment: datetime) -> str:
    """A time as a person types it in the datetime-local input (São Paulo time)."""
    return moment.astimezone(SAO_PAULO).strftime("%Y-%m-%dT%H:%M")


def test_an_owner_adds_an_endpoint_and_sees_its_secret_only_once(app, client, owner):
    sign_in(client, owner)
    page = _text(client.get(PAGE))
    assert '<a href="/dashboard/webhooks" aria-current="page">Webhooks</a>' in page
    assert '<label for="url">Endpoint URL</label>' in page
    for legend in ("Events", "Canonical", "Disputes", "Legacy"):
        assert f"<legend>{legend}</legend>" in page
    assert '<label for="events-charge.paid" class="mono">charge.paid</label>' in page
    assert 'value="payment.status_changed"' in page and "No test endpoints yet." in page

    response = _add(client, "http://localhost:9000/hooks", ("charge.paid", "payment.created"))
    assert response.status_code == 201
    text = _text(response)
    secret = SECRET.search(text).group(1)
    assert 'data-copy-target="webhook-secret"' in text and "Receiving webhooks" in text
    (endpoint,) = _endpoints(app)
    assert (endpoint.url, endpoint.events, endpoint.mode, endpoint.status) == (
        "http://localhost:9000/hooks",
        ["charge.paid", "payment.created"],
        KeyMode.TEST,
        EndpointStatus.ACTIVE,
    )
    assert _secret(app, endpoint.id) == secret

    raw = client.get(PAGE).get_data(as_text=True)
    assert '<span class="mono">http://<wbr>localhost:9000<wbr>/hooks</span>' in raw
    listing = _text(client.get(PAGE))
    assert secret not in listing and SECRET.search(listing) is None
    assert '<td class="mono">charge.paid, payment.created</td>' in listing
    assert 'class="badge status-active">Active<' in listing


@pytest.mark.parametrize(
    ("path", "url", "events", "field", "message"),
    [
        (PAGE, "ftp://example.com/h", ["charge.paid"], "url", "url must be an http(s) address"),
        (PAGE, "", ["charge.paid"], "url", "url must be an http(s) address"),
        (PAGE, "https://example.com/h", [], "events", "events lists at least one event name."),
        (PAGE, "https://example.com/h", ["charge.exploded"], "events", "Unknown event names"),
        (f"{PAGE}?mode=live", "http://example.com/h", ["charge.paid"], "url", "must use https"),
    ],
)
def test_a_refused_endpoint_is_shown_beside_its_field(
    app, client, owner, path, url, events, field, message
):
    sign_in(client, owner)
    response = _add(client, url, events, path)
    assert response.status_code == 400
    text = _text(response)
    assert message in text and f'id="{field}-error"' in text
    assert "The endpoint was not added." in text and SECRET.search(text) is None
    if field == "url":
        assert 'aria-invalid="true"' in text and f'value="{url}"' in text
    assert count_rows(app, WebhookEndpoint) == 0


def test_an_owner_edits_url_events_and_status(app, client, owner):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks", ("charge.paid",))
    form_page = f"{PAGE}?mode=test&edit={endpoint_id}"
    text = _text(client.get(form_page))
    assert 'value="http://localhost:9000/hooks"' in text
    assert 'id="events-charge.paid" name="events" value="charge.paid" checked>' in text
    assert 'id="events-charge.created" name="events" value="charge.created">' in text
    assert '<option selected value="ACTIVE">Active</option>' in text

    action = f"{PAGE}/{endpoint_id}?mode=test"
    changes = {
        "url": "http://localhost:9001/new",
        "events": ["charge.created", "payment.status_changed"],
        "status": "INACTIVE",
    }
    response = post_form(client, form_page, action, changes)
    assert response.status_code == 303
    assert response.headers["Location"] == "/dashboard/webhooks?mode=test"
    (endpoint,) = _endpoints(app)
    assert (endpoint.url, endpoint.events, endpoint.status) == (
        "http://localhost:9001/new",
        ["charge.created", "payment.status_changed"],
        EndpointStatus.INACTIVE,
    )
    listing = _text(client.get(PAGE))
    assert "Endpoint http://localhost:9001/new updated." in listing
    assert 'class="badge status-inactive">Inactive<' in listing

    refused = post_form(
        client, form_page, action, {**changes, "url": "https://x.test/", "events": []}
    )
    assert refused.status_code == 400
    text = _text(refused)
    assert "events lists at least one event name." in text and 'id="events-error"' in text
    assert "The endpoint was not changed." in text
    assert 'Edit <span class="mono">http://localhost:9001/new</span>' in text
    assert _endpoints(app)[0].url == "http://localhost:9001/new"


def test_adding_a_url_the_account_has_shows_the_form_again_naming_its_endpoint(app, client, owner):
    """Issue 21: a second endpoint with one URL had every event delivered twice."""
    sign_in(client, owner)
    first = _added(app, client, "http://localhost:9000/hooks")
    response = _add(client, "http://localhost:9000/hooks", ("charge.paid",))
    assert response.status_code == 409
    text = _text(response)
    assert "The endpoint was not added." in text and SECRET.search(text) is None
    assert _url_error(text).startswith(f"Webhook endpoint {first} already has this URL;")
    assert 'aria-invalid="true"' in text and 'value="http://localhost:9000/hooks"' in text
    assert 'id="events-charge.paid" name="events" value="charge.paid" checked>' in text
    assert [endpoint.id for endpoint in _endpoints(app)] == [first]


def test_editing_to_another_endpoints_url_is_refused_beside_the_field(app, client, owner):
    sign_in(client, owner)
    first = _added(app, client, "http://localhost:9000/hooks")
    second = _added(app, client, "http://localhost:9000/other")
    changes = {"url": "http://localhost:9000/hooks", "events": ["charge.paid"], "status": "ACTIVE"}
    response = post_form(
        client, f"{PAGE}?mode=test&edit={second}", f"{PAGE}/{second}?mode=test", changes
    )
    assert response.status_code == 409
    text = _text(response)
    assert "The endpoint was not changed." in text
    assert _url_error(text).startswith(f"Webhook endpoint {first} already has this URL;")
    assert 'Edit <span class="mono">http://localhost:9000/other</span>' in text
    assert [(e.url, e.events) for e in _endpoints(app)] == [
        ("http://localhost:9000/hooks", ["charge.created"]),
        ("http://localhost:9000/other", ["charge.created"]),
    ]


def _url_error(text: str) -> str:
    return re.search(r'<span id="url-error" class="field-error">([^<]*)</span>', text).group(1)


def test_a_url_is_at_most_2048_bytes_of_utf8(app, client, owner):
    """The page takes what the API's pattern refuses (non-ASCII), so the length is counted in
    bytes: what the unique index on (account, mode, url) can hold on PostgreSQL."""
    sign_in(client, owner)
    base = "http://localhost:9000/"
    assert _add(client, base + "é" * ((2048 - len(base)) // 2)).status_code == 201
    refused = _add(client, base + "ê" * ((2048 - len(base)) // 2 + 1))
    assert refused.status_code == 400
    assert _url_error(_text(refused)) == "url must be an http(s) address with a host."
    assert count_rows(app, WebhookEndpoint) == 1


class _ScreenReading(HTMLParser):
    """What a screen reader gets of each checkbox: the text of its `<label for>`, the text its
    `aria-describedby` points at, and the legends of the fieldsets around it."""

    def __init__(self):
        super().__init__()
        self.checkboxes: list[tuple[dict, tuple[str, ...]]] = []
        self.labels: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self._legends: list[str] = []
        self._open: tuple[str, dict] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "fieldset":
            self._legends.append("")
        elif tag == "input" and attrs.get("type") == "checkbox":
            self.checkboxes.append((attrs, tuple(self._legends)))
        elif tag in ("legend", "label", "span") and self._open is None:
            self._open, self._text = (tag, attrs), []

    def handle_data(self, data):
        self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "fieldset":
            self._legends.pop()
        elif self._open is not None and tag == self._open[0]:
            text, attrs = " ".join("".join(self._text).split()), self._open[1]
            if tag == "legend":
                self._legends[-1] = text
            if tag == "label" and attrs.get("for"):
                self.labels[attrs["for"]] = text
            if attrs.get("id"):
                self.texts[attrs["id"]] = text
            self._open = None


def test_every_event_checkbox_is_labelled_described_and_grouped(app, client, owner):
    """Issue 21: a screen reader names each of the 20 event checkboxes by its `<label for>`
    (the event), reads the catalog's description with it (`aria-describedby`), and announces
    the fieldset legends around it: "Events", then its group."""
    group_of = {entry.event: group for group, entries in EVENT_GROUPS for entry in entries}
    described = {entry.event: entry.description for entry in event_catalog.CATALOG}
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    for path in (PAGE, f"{PAGE}?mode=test&edit={endpoint_id}"):
        reading = _ScreenReading()
        reading.feed(client.get(path).get_data(as_text=True))
        assert len(reading.checkboxes) == len(event_catalog.CATALOG) == 20
        for attrs, legends in reading.checkboxes:
            event = attrs["value"]
            assert reading.labels.get(attrs["id"]) == event, attrs
            assert reading.texts[attrs["aria-describedby"]] == described[event]
            assert legends == ("Events", group_of[event])


def test_the_quick_switch_disables_and_enables(app, client, owner):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    page = _text(client.get(PAGE))
    assert 'name="status" type="hidden" value="INACTIVE"' in page and ">Disable<" in page
    action = f"{PAGE}/{endpoint_id}/status?mode=test"
    response = post_form(client, PAGE, action, {"status": "INACTIVE"})
    assert response.status_code == 303
    assert _endpoints(app)[0].status is EndpointStatus.INACTIVE
    page = _text(client.get(PAGE))
    assert "Endpoint http://localhost:9000/hooks disabled" in page and ">Enable<" in page
    assert post_form(client, PAGE, action, {"status": "ACTIVE"}).status_code == 303
    assert _endpoints(app)[0].status is EndpointStatus.ACTIVE
    assert post_form(client, PAGE, action, {"status": "PAUSED"}).status_code == 400
    assert _endpoints(app)[0].status is EndpointStatus.ACTIVE


def test_rotation_shows_the_new_secret_once(app, client, owner):
    sign_in(client, owner)
    old = SECRET.search(_text(_add(client, "http://localhost:9000/hooks"))).group(1)
    endpoint_id = _endpoints(app)[0].id
    response = post_form(client, PAGE, f"{PAGE}/{endpoint_id}/rotate?mode=test")
    assert response.status_code == 200
    text = _text(response)
    new = SECRET.search(text).group(1)
    assert new != old and _secret(app, endpoint_id) == new
    assert "New signing secret" in text and "the old secret no longer verifies" in text
    assert new not in _text(client.get(PAGE))


def test_delete_cancels_the_deliveries_still_waiting(app, client, owner, api_key):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    _relayed(app, client, api_key)
    (delivery,) = _deliveries(app)
    assert delivery.status == "PENDING"
    page = _text(client.get(PAGE))
    assert 'data-confirm="Delete http://localhost:9000/hooks? Deliveries still waiting' in page
    response = post_form(client, PAGE, f"{PAGE}/{endpoint_id}/delete?mode=test")
    assert response.status_code == 303
    assert response.headers["Location"] == "/dashboard/webhooks?mode=test"
    assert _deliveries(app)[0].status == "CANCELLED"
    page = _text(client.get(PAGE))
    assert "Endpoint http://localhost:9000/hooks deleted" in page
    assert "No test endpoints yet." in page
    log = _text(client.get(LOG))
    assert "(deleted endpoint)" in log and 'class="badge status-cancelled">Cancelled<' in log


def test_the_log_lists_real_deliveries_and_filters_them(
    app, client, owner, api_key, receiver, redis, monkeypatch
):
    sign_in(client, owner)
    endpoint_id = _added(app, client, receiver.url, ("charge.created", "payment.created"))
    created(client, api_key)
    _run_worker(app, redis)
    assert len(receiver.received) == 2

    text = _text(client.get(LOG))
    assert text.count(f'<td class="mono endpoint">{receiver.url}</td>') == 2
    assert text.count('class="badge status-delivered">Delivered<') == 2
    assert '<td class="mono">charge.created</td>' in text
    assert '<td class="mono">payment.created</td>' in text
    assert "<td>1/15</td>" in text and "<td>200</td>" in text
    for name in ("status-filter", "event-type-filter", "endpoint-filter"):
        assert f'<label for="{name}">' in text
    assert f'<option value="{endpoint_id}">{receiver.url}</option>' in text

    only = _text(client.get(f"{LOG}?event_type=charge.created&endpoint_id={endpoint_id}"))
    assert '<td class="mono">charge.created</td>' in only
    assert '<td class="mono">payment.created</td>' not in only
    assert '<option value="charge.created" selected>' in only
    assert "No test deliveries match these filters." in _text(client.get(f"{LOG}?status=FAILED"))

    monkeypatch.setattr("app.dashboard.webhook_deliveries.PER_PAGE", 1)
    first = _text(client.get(f"{LOG}?status=DELIVERED&endpoint_id={endpoint_id}"))
    assert "Page 1 of 2 (2 deliveries)" in first
    next_link = re.search(r'<a href="([^"]+)">Next page</a>', first).group(1)
    assert parse_qs(urlsplit(next_link).query) == {
        "mode": ["test"],
        "status": ["DELIVERED"],
        "endpoint_id": [endpoint_id],
        "page": ["2"],
    }
    second = _text(client.get(next_link))
    assert "Page 2 of 2" in second and "Previous page" in second


def test_a_long_address_wraps_at_its_slashes_and_dots(app, client, owner):
    sign_in(client, owner)
    _added(app, client, "http://localhost:9000/api/v1/hooks?shop=loja&v=2")
    raw = client.get(PAGE).get_data(as_text=True)
    assert (
        '<span class="mono">http://<wbr>localhost:9000<wbr>/api<wbr>/v1<wbr>/hooks'
        "<wbr>?shop<wbr>=loja<wbr>&amp;v<wbr>=2</span>"
    ) in raw
    assert 'class="mono destination"' not in raw  # no more breaking every few characters


@pytest.mark.parametrize(
    "query",
    ["status=DONE", "event_type=charge.exploded", "endpoint_id=nope", "page=0", "mode=prod"],
)
def test_a_bad_filter_is_400(client, owner, query):
    sign_in(client, owner)
    assert client.get(f"{LOG}?{query}").status_code == 400
    assert client.get(f"{CSV_URL}?{query}").status_code == 400


# The delivery log's CSV export


def test_the_log_exports_as_csv_with_its_filters_in_chunks(
    app, client, owner, api_key, monkeypatch, chunk_sizes
):
    sign_in(client, owner)
    events = ("charge.created", "payment.created")
    first = _added(app, client, "http://localhost:9000/hooks", events)
    second = _added(app, client, "http://localhost:9001/other", ("charge.created",))
    _relayed(app, client, api_key, charges=2)
    listed = _listed_ids(app, owner.account_id)
    assert len(listed) == 6
    failed = _deliveries(app, endpoint_id=first, event_type="payment.created")[0].id
    with app.app_context():
        db.session.execute(
            sa.update(WebhookDelivery)
            .where(WebhookDelivery.id == failed)
            .values(
                status="FAILED",
                attempts=15,
                last_status_code=500,
                last_error="=cmd|' /C calc'!A0",
                last_attempt_at=datetime(2026, 11, 21, 15, 4, 5, tzinfo=UTC),
                next_retry_at=None,
            )
        )
        db.session.commit()
    monkeypatch.setattr(webhook_pages, "EXPORT_CHUNK", 2)

    chunk_sizes.clear()
    response = client.get(CSV_URL)
    assert response.status_code == 200
    assert response.is_streamed
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="webhook-deliveries-test.csv"'
    )
    rows = _csv(response)
    assert [size for size in chunk_sizes if size] == [2]  # one query, read two rows at a time
    assert rows[0] == CSV_HEADER
    assert [row[0] for row in rows[1:]] == listed  # the log's rows in the log's order
    row = dict(zip(CSV_HEADER, next(r for r in rows if r[0] == failed), strict=True))
    (stored,) = _deliveries(app, id=failed)
    assert UTC_TIME.fullmatch(row.pop("created_at"))
    assert row == {
        "id": failed,
        "event_type": "payment.created",
        "event_id": stored.event_id,
        "endpoint_id": first,
        "endpoint_url": "http://localhost:9000/hooks",
        "status": "FAILED",
        "attempts": "15",
        "max_attempts": "15",
        "last_status_code": "500",
        "last_error": "'=cmd|' /C calc'!A0",  # a formula guarded
        "last_attempt_at": "2026-11-21T15:04:05Z",
        "next_retry_at": "",
        "delivered_at": "",
        "resent_from_id": "",
    }
    assert stored.event_id.startswith("evt_")
    waiting = dict(zip(CSV_HEADER, next(r for r in rows[1:] if r[0] != failed), strict=True))
    assert (waiting["status"], waiting["attempts"], waiting["last_status_code"]) == (
        "PENDING",
        "0",
        "",
    )
    assert UTC_TIME.fullmatch(waiting["next_retry_at"])

    only = "?event_type=charge.created&endpoint_id=" + first
    assert _csv_ids(client, only) == _listed_ids(
        app, owner.account_id, event_type="charge.created", endpoint_id=first
    )
    assert len(_csv_ids(client, only)) == 2
    assert _csv_ids(client, "?status=FAILED") == [failed]
    assert _csv_ids(client, "?status=DELIVERED") == []

    post_form(client, PAGE, f"{PAGE}/{second}/delete?mode=test")
    gone = [row for row in _csv(client.get(CSV_URL))[1:] if row[4] == second]
    assert len(gone) == 2
    assert {(row[5], row[6]) for row in gone} == {("", "CANCELLED")}  # as the log shows it
    assert client.get(f"{CSV_URL}?endpoint_id={second}").status_code == 400


def test_the_log_page_links_its_export_with_its_filters(app, client, owner, api_key):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    _relayed(app, client, api_key)
    text = _text(client.get(f"{LOG}?status=PENDING&endpoint_id={endpoint_id}&page=1"))
    link = re.search(r'<a href="([^"]+)" download>Download these deliveries as CSV', text)
    assert urlsplit(link.group(1)).path == CSV_URL
    assert parse_qs(urlsplit(link.group(1)).query) == {
        "mode": ["test"],
        "status": ["PENDING"],
        "endpoint_id": [endpoint_id],
    }
    assert len(_csv_ids(client, "?" + urlsplit(link.group(1)).query)) == 1
    live = _text(client.get(f"{LOG}?mode=live"))
    assert f'<a href="{CSV_URL}?mode=live" download>' in live


def test_the_export_keeps_test_and_live_apart(app, client, owner, api_key):
    sign_in(client, owner)
    _added(app, client, "http://localhost:9000/hooks")
    _relayed(app, client, api_key)
    live = _live_delivery(app, owner.account_id)
    (test_delivery,) = _listed_ids(app, owner.account_id)
    assert _csv_ids(client) == [test_delivery]
    response = client.get(f"{CSV_URL}?mode=live")
    assert 'filename="webhook-deliveries-live.csv"' in response.headers["Content-Disposition"]
    (row,) = _csv(response)[1:]
    assert (row[0], row[5]) == (live, "https://hooks.example.com/live")


def test_a_delivery_shows_what_was_sent_and_answered_and_can_be_resent(
    app, client, owner, api_key, receiver, redis
):
    sign_in(client, owner)
    _added(app, client, receiver.url, ("charge.created",))
    receiver.reply(500)
    charge = created(client, api_key)
    _run_worker(app, redis)
    (delivery,) = _deliveries(app)
    assert delivery.status == "PENDING"

    log = _text(client.get(LOG))
    link = f"/dashboard/webhooks/deliveries/{delivery.id}?mode=test"
    assert f'<a href="{link}">View' in log and "<td>500</td>" in log
    text = _text(client.get(link))
    assert '  "type": "charge.created",' in text
    assert f'"id": "{charge["id"]}"' in text
    assert '<dt class="mono">X-Acme-Event-Type</dt><dd class="mono">charge.created</dd>' in text
    assert f'<dt class="mono">X-Acme-Delivery-Id</dt><dd class="mono">{delivery.id}</dd>' in text
    assert '<dt class="mono">Content-Type</dt><dd class="mono">application/json</dd>' in text
    assert "t=<unix time>,v1=<hex>" in text and "computed for each attempt" in text
    assert "<dt>Status code</dt><dd>500</dd>" in text
    assert "The endpoint answered HTTP 500." in text and '<pre class="code">nope</pre>' in text

    response = post_form(client, link, f"/dashboard/webhooks/deliveries/{delivery.id}/resend")
    assert response.status_code == 303
    (copy,) = _deliveries(app, resent_from_id=delivery.id)
    assert response.headers["Location"] == f"/dashboard/webhooks/deliveries/{copy.id}?mode=test"
    _run_worker(app, redis)
    assert _deliveries(app, id=copy.id)[0].status == "DELIVERED"
    text = _text(client.get(response.headers["Location"]))
    assert "Queued again: this is the new delivery of the same event." in text
    assert f">{delivery.id}</a>" in text and "<dt>Status code</dt><dd>200</dd>" in text

    endpoint_id = _endpoints(app)[0].id
    post_form(client, PAGE, f"{PAGE}/{endpoint_id}/status?mode=test", {"status": "INACTIVE"})
    text = _text(client.get(link))
    assert "/resend" not in text and "enable it on the webhooks page to resend" in text
    refused = post_form(client, PAGE, f"/dashboard/webhooks/deliveries/{delivery.id}/resend")
    assert (refused.status_code, refused.headers["Location"]) == (303, link)
    assert "The endpoint is INACTIVE; activate it first." in _text(client.get(link))
    assert count_rows(app, WebhookDelivery) == 2


def test_recovery_queues_the_failed_deliveries_since_a_sao_paulo_time(app, client, owner, api_key):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    _relayed(app, client, api_key, charges=2)
    _set_deliveries(app, status="FAILED", next_retry_at=None)
    page = _text(client.get(PAGE))
    assert f'<label for="since-{endpoint_id}">Failed since</label>' in page
    action = f"{PAGE}/{endpoint_id}/recover?mode=test"

    # Read as UTC, a São Paulo time two minutes from now would be hours ago: nothing then.
    later = post_form(
        client, PAGE, action, {"since": _local_minute(datetime.now(UTC) + timedelta(minutes=2))}
    )
    assert later.status_code == 303
    assert "0 deliveries queued again." in _text(client.get(PAGE))

    response = post_form(
        client, PAGE, action, {"since": _local_minute(datetime.now(UTC) - timedelta(minutes=2))}
    )
    assert response.status_code == 303
    location = response.headers["Location"]
    assert location == f"{LOG}?mode=test&endpoint_id={endpoint_id}"
    assert "2 deliveries queued again." in _text(client.get(location))
    assert len(_deliveries(app, status="PENDING")) == 2
    assert all(d.resent_from_id for d in _deliveries(app, status="PENDING"))

    empty = post_form(client, PAGE, action, {"since": ""})
    assert empty.status_code == 303
    assert "Failed since:" in _text(client.get(PAGE))

    post_form(client, PAGE, f"{PAGE}/{endpoint_id}/status?mode=test", {"status": "INACTIVE"})
    assert f"/{endpoint_id}/recover" not in _text(client.get(PAGE))
    inactive = post_form(client, PAGE, action, {"since": "2020-01-01T00:00"})
    assert inactive.status_code == 303
    assert "The endpoint is INACTIVE; activate it first." in _text(client.get(PAGE))
    assert count_rows(app, WebhookDelivery) == 4


def test_a_member_reads_every_page_but_is_refused_every_change(app, client, owner, api_key):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    _relayed(app, client, api_key)
    (delivery,) = _deliveries(app)

    member = factories.make_member(app, owner.account_id, Role.MEMBER)
    client = app.test_client()
    sign_in(client, member)
    detail = f"{LOG}/{delivery.id}?mode=test"
    for path in (PAGE, LOG, detail):
        response = client.get(path)
        assert response.status_code == 200, path
    export = client.get(CSV_URL)
    assert export.status_code == 200
    assert [row[0] for row in _csv(export)[1:]] == [delivery.id]  # any member may export
    page = _text(client.get(PAGE))
    assert "http://localhost:9000/hooks" in page
    assert "Only an OWNER or ADMIN of the account can add or change endpoints." in page
    for hidden in ("Add endpoint", "/rotate", "/delete", "/recover", "/status", "edit="):
        assert hidden not in page, hidden
    assert "/resend" not in _text(client.get(detail))
    assert client.get(f"{PAGE}?edit={endpoint_id}").status_code == 403

    endpoint = f"{PAGE}/{endpoint_id}"
    posts = {
        PAGE: {"url": "http://localhost:9000/other", "events": ["charge.paid"]},
        endpoint: {"url": "http://x.test/", "events": ["charge.paid"], "status": "INACTIVE"},
        f"{endpoint}/status": {"status": "INACTIVE"},
        f"{endpoint}/rotate": {},
        f"{endpoint}/delete": {},
        f"{endpoint}/recover": {"since": "2020-01-01T00:00"},
        f"{LOG}/{delivery.id}/resend": {},
    }
    secret = _secret(app, endpoint_id)
    for action, data in posts.items():
        response = post_form(client, PAGE, action, data)
        assert response.status_code == 403, action
        assert "Only an OWNER or ADMIN of the account can manage webhooks." in _text(response)
    (stored,) = _endpoints(app)
    assert (stored.url, stored.status, stored.deleted_at) == (
        "http://localhost:9000/hooks",
        EndpointStatus.ACTIVE,
        None,
    )
    assert _secret(app, endpoint_id) == secret
    assert count_rows(app, WebhookDelivery) == 1


def test_an_admin_manages_endpoints(app, client, owner):
    admin = factories.make_member(app, owner.account_id, Role.ADMIN)
    sign_in(client, admin)
    assert _add(client, "http://localhost:9000/hooks").status_code == 201


def test_a_failing_endpoint_is_flagged_on_the_webhooks_page_and_the_overview(app, client, owner):
    sign_in(client, owner)
    endpoint_id = _added(app, client, "http://localhost:9000/hooks")
    threshold = app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]
    assert "keep failing" not in _text(client.get(PAGE))
    assert "dead letters" not in _text(client.get(PAGE))  # none yet: nothing to say
    assert "keeps failing" not in _text(client.get("/dashboard/"))
    with app.app_context():
        db.session.execute(sa.update(WebhookEndpoint).values(consecutive_dead_letters=threshold))
        db.session.commit()

    page = _text(client.get(PAGE))
    assert (
        'Deliveries to <span class="mono">http://localhost:9000/hooks</span> keep failing' in page
    )
    assert f'<span class="muted">{threshold} dead letters in a row</span>' in page
    failed = f"{LOG}?mode=test&status=FAILED&endpoint_id={endpoint_id}"
    assert f'<a href="{failed}">See its failed deliveries</a>' in page
    assert client.get(failed).status_code == 200
    overview = _text(client.get("/dashboard/"))
    assert "Deliveries to 1 test webhook endpoint keeps failing." in overview
    assert '<a href="/dashboard/webhooks?mode=test">Check your test webhooks</a>' in overview
    assert "live webhook" not in overview


def test_another_accounts_endpoints_and_deliveries_are_404(app, client, owner):
    other = factories.make_account(app, "Alheia")
    with app.app_context():
        endpoint, _secret_value = webhook_endpoints.create_endpoint(
            other, KeyMode.TEST, "http://localhost:9000/theirs", ["charge.created"]
        )
        db.session.commit()
        endpoint_id = endpoint.id
    created(client, factories.make_api_key(app, other))
    with app.app_context():
        webhook_jobs.relay_events()
    (delivery,) = _deliveries(app)

    sign_in(client, owner)
    assert client.get(f"{PAGE}?edit={endpoint_id}").status_code == 404
    assert client.get(f"{LOG}/{delivery.id}?mode=test").status_code == 404
    assert client.get(f"{LOG}?endpoint_id={endpoint_id}").status_code == 400
    assert client.get(f"{CSV_URL}?endpoint_id={endpoint_id}").status_code == 400
    endpoint_path = f"{PAGE}/{endpoint_id}"
    posts = {
        endpoint_path: {"url": "http://x.test/", "events": ["charge.paid"], "status": "ACTIVE"},
        f"{endpoint_path}/status": {"status": "INACTIVE"},
        f"{endpoint_path}/rotate": {},
        f"{endpoint_path}/delete": {},
        f"{endpoint_path}/recover": {"since": "2020-01-01T00:00"},
        f"{LOG}/{delivery.id}/resend": {},
    }
    for action, data in posts.items():
        assert post_form(client, PAGE, action, data).status_code == 404, action
    (stored,) = _endpoints(app)
    assert (stored.url, stored.status, stored.deleted_at) == (
        "http://localhost:9000/theirs",
        EndpointStatus.ACTIVE,
        None,
    )
    assert count_rows(app, WebhookDelivery) == 1

    _live_delivery(app, other)
    for query in ("", "?mode=live", "?status=PENDING"):
        assert _csv(client.get(f"{CSV_URL}{query}")) == [CSV_HEADER], query
