"""GET /v1/charges: the designed list contract (cursor pagination, filters, 400s)."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.support import factories
from tests.support.charges import CNPJ, CPF, created, raw, update_row
from tests.support.http import assert_error

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


def _list(client, api_key, query: str = ""):
    return client.get(f"/v1/charges{query}", headers={"apikey": api_key})


def _make(app, client, api_key, count: int, *, at=None, **overrides) -> list[str]:
    ids = []
    for index in range(count):
        charge = created(client, api_key, **overrides)
        if at is not None:
            update_row(app, charge["id"], created_at=at + timedelta(minutes=index))
        ids.append(charge["id"])
    return ids


def test_newest_first_with_the_list_envelope(app, client, api_key):
    ids = _make(app, client, api_key, 3, at=T0)
    body = _list(client, api_key).get_json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    assert body["object"] == "list"
    assert [c["id"] for c in body["data"]] == list(reversed(ids))
    assert body["has_more"] is False
    assert body["next_cursor"] is None


def test_cursor_walks_every_charge_once_even_with_equal_timestamps(app, client, api_key):
    """Stable order: charges created in the same instant are neither skipped nor repeated."""
    ids = _make(app, client, api_key, 7)
    for charge_id in ids:
        update_row(app, charge_id, created_at=T0)
    seen, cursor = [], None
    while True:
        query = "?limit=3" + (f"&starting_after={cursor}" if cursor else "")
        body = _list(client, api_key, query).get_json()
        seen += [c["id"] for c in body["data"]]
        assert len(body["data"]) <= 3
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        assert body["next_cursor"] == body["data"][-1]["id"]
        cursor = body["next_cursor"]
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen)) == 7


def test_default_limit_is_25(app, client, api_key):
    _make(app, client, api_key, 26)
    body = _list(client, api_key).get_json()
    assert len(body["data"]) == 25
    assert body["has_more"] is True


def test_status_filter_uses_the_public_vocabulary(app, client, api_key):
    paid, pending = _make(app, client, api_key, 2)
    client.post(f"/v1/sandbox/charges/{paid}/pay", json={}, headers={"apikey": api_key})
    failed = created(client, api_key, amount=50_300)["id"]
    assert [c["id"] for c in _list(client, api_key, "?status=paid").get_json()["data"]] == [paid]
    assert [c["id"] for c in _list(client, api_key, "?status=pending").get_json()["data"]] == [
        pending
    ]
    assert [c["id"] for c in _list(client, api_key, "?status=failed").get_json()["data"]] == [
        failed
    ]
    assert _list(client, api_key, "?status=refunded").get_json()["data"] == []


def test_created_after_and_before_are_inclusive(app, client, api_key):
    ids = _make(app, client, api_key, 4, at=T0)  # T0, T0+1m, T0+2m, T0+3m
    start = (T0 + timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    end = (T0 + timedelta(minutes=2)).isoformat().replace("+00:00", "Z")
    body = _list(client, api_key, f"?created_after={start}&created_before={end}").get_json()
    assert [c["id"] for c in body["data"]] == [ids[2], ids[1]]
    naive = (T0 + timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M:%S")
    body = _list(client, api_key, f"?created_after={naive}").get_json()
    assert [c["id"] for c in body["data"]] == [ids[3]]


def test_customer_id_filters_by_payer_document(app, client, api_key):
    ana = created(client, api_key, customer={"name": "Ana", "document": CPF})["id"]
    locked = created(
        client, api_key, customer={"name": "Ana"}, expected_payer_tax_id="529.982.247-25"
    )["id"]
    created(client, api_key, customer={"name": "Loja", "document": CNPJ})
    body = _list(client, api_key, f"?customer_id={CPF}").get_json()
    assert {c["id"] for c in body["data"]} == {ana, locked}


def test_other_accounts_and_modes_are_not_listed(app, client, api_key):
    other_key = factories.make_api_key(app, factories.make_account(app, "Other"))
    created(client, other_key)
    assert _list(client, api_key).get_json()["data"] == []


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("?page=2", "page"),
        ("?offset=10", "offset"),
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?limit=ten", "limit"),
        ("?status=PAID", "status"),
        ("?status=unknown", "status"),
        ("?created_after=yesterday", "created_after"),
        ("?created_before=2026-13-01T00:00:00Z", "created_before"),
        ("?starting_after=not-a-charge", "starting_after"),
        ("?starting_after=ch_00000000-0000-0000-0000-000000000000", "starting_after"),
        ("?customer_id=123", "customer_id"),
        ("?sort=asc", "sort"),
        ("?created_after=2026-11-01", "created_after"),
        ("?created_before=2026-11-01", "created_before"),
        ("?status=pending&status=paid", "status"),
        ("?limit=5&limit=500", "limit"),
    ],
)
def test_unknown_or_malformed_filters_are_refused(client, api_key, query, param):
    response = _list(client, api_key, query)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


def test_a_cursor_from_another_account_is_refused(app, client, api_key):
    other_key = factories.make_api_key(app, factories.make_account(app, "Other"))
    foreign = created(client, other_key)["id"]
    response = _list(client, api_key, f"?starting_after={foreign}")
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="starting_after")
    assert raw(foreign) not in response.get_data(as_text=True)


def test_listing_requires_a_key(client):
    assert_error(client.get("/v1/charges"), 401, "authentication_error", "unauthorized")


def test_status_filter_sees_an_overdue_charge_as_expired_before_the_sweep(app, client, api_key):
    """A charge past its expiry is listed under expired, never under pending."""
    overdue, fresh = _make(app, client, api_key, 2)
    update_row(app, overdue, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    pending = _list(client, api_key, "?status=pending").get_json()["data"]
    assert [c["id"] for c in pending] == [fresh]
    expired = _list(client, api_key, "?status=expired").get_json()["data"]
    assert [(c["id"], c["status"]) for c in expired] == [(overdue, "expired")]
