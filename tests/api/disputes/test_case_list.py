"""`GET /v1/med/cases` to the letter of the contract (limit, cursor, filters, exclusive dates,
newest first, every 400), the same routes under the `/v1/infractions` aliases, and another
account's cases answering 404 everywhere."""

from datetime import UTC, datetime, timedelta

import pytest

from app.models import KeyMode
from tests.support import disputes as d
from tests.support import factories
from tests.support.refunds import merchant

ALIASES = ["/v1/med/cases", "/v1/infractions", "/v1/infractions/cases"]
T0 = datetime(2026, 11, 10, 12, 0, tzinfo=UTC)


def _cases(app, client, shop, count: int, **body) -> list[dict]:
    """`count` cases on as many paid charges, created one hour apart from T0 (oldest first)."""
    made = []
    for index in range(count):
        charge = d.paid_charge(app, client, shop)
        case = d.opened(client, shop, charge["id"], **body)
        d.update_case(app, case["id"], created_at=T0 + timedelta(hours=index))
        made.append(case)
    return made


def _list(client, api_key: str, query: str = "", path: str = "/v1/med/cases"):
    return client.get(f"{path}?{query}" if query else path, headers={"apikey": api_key})


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [case["id"] for case in response.get_json()["data"]]


def test_newest_first_with_a_cursor_that_walks_every_case_once(app, client, shop):
    made = _cases(app, client, shop, 5)
    newest_first = [case["id"] for case in reversed(made)]
    seen, cursor = [], None
    while True:
        query = "limit=2" + (f"&starting_after={cursor}" if cursor else "")
        body = _list(client, shop.api_key, query).get_json()
        assert body["object"] == "list"
        seen += [case["id"] for case in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        assert body["next_cursor"] == body["data"][-1]["id"]
        cursor = body["next_cursor"]
    assert seen == newest_first


def test_default_limit_is_25(app, client, shop):
    _cases(app, client, shop, 26)
    body = _list(client, shop.api_key).get_json()
    assert len(body["data"]) == 25 and body["has_more"] is True


def test_filters_by_status_type_and_charge(app, client, shop):
    first, second, third = _cases(app, client, shop, 3)
    d.call(client, shop.api_key, "POST", f"/v1/med/cases/{second['id']}/accept")
    fraud = _cases(app, client, shop, 1, type="fraud")[0]
    assert _ids(_list(client, shop.api_key, "status=accepted")) == [second["id"]]
    assert _ids(_list(client, shop.api_key, "status=open&type=med")) == [third["id"], first["id"]]
    assert _ids(_list(client, shop.api_key, "type=fraud")) == [fraud["id"]]
    assert _ids(_list(client, shop.api_key, "status=closed")) == []
    charge_query = f"charge_id={first['charge_id']}"
    assert _ids(_list(client, shop.api_key, charge_query)) == [first["id"]]
    assert _ids(_list(client, shop.api_key, "charge_id=ch_unknown")) == []


def test_created_bounds_are_exclusive(app, client, shop):
    made = _cases(app, client, shop, 3)
    middle = (T0 + timedelta(hours=1)).isoformat()
    after = _list(client, shop.api_key, f"created_after={middle.replace('+00:00', 'Z')}")
    assert _ids(after) == [made[2]["id"]]
    before = _list(client, shop.api_key, f"created_before={middle.replace('+', '%2B')}")
    assert _ids(before) == [made[0]["id"]]
    zoned = (T0 + timedelta(hours=1)).astimezone().isoformat().replace("+", "%2B")
    assert _ids(_list(client, shop.api_key, f"created_after={zoned}")) == [made[2]["id"]]
    assert _ids(_list(client, shop.api_key, "created_after=2026-11-10")) == [
        case["id"] for case in reversed(made)
    ]
    assert _ids(_list(client, shop.api_key, "created_before=2026-11-10")) == []


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("limit=", "limit"),
        ("limit=%2010", "limit"),
        ("limit=1_0", "limit"),
        ("limit=%D9%A3", "limit"),
        ("limit=10.0", "limit"),
        ("status=won", "status"),
        ("status=OPEN", "status"),
        ("type=card", "type"),
        ("created_after=yesterday", "created_after"),
        ("created_before=2026-13-01", "created_before"),
        ("created_after=2026-11-10T25:00:00Z", "created_after"),
        ("starting_after=ch_123", "starting_after"),
        ("starting_after=med_00000000-0000-0000-0000-000000000000", "starting_after"),
        ("charge_id=123", "charge_id"),
        ("page=2", "page"),
        ("status=open&status=closed", "status"),
    ],
)
def test_every_unknown_or_malformed_value_is_a_400(app, client, shop, query, param):
    response = _list(client, shop.api_key, query)
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert error["type"] == "invalid_request_error"
    params = {detail["param"] for detail in error.get("details") or []} | {error.get("param")}
    assert param in params


def test_limit_bounds_are_accepted(app, client, shop):
    _cases(app, client, shop, 2)
    assert len(_ids(_list(client, shop.api_key, "limit=1"))) == 1
    assert len(_ids(_list(client, shop.api_key, "limit=100"))) == 2


def test_another_accounts_case_is_not_a_cursor(app, client, shop, monkeypatch):
    theirs = _cases(app, client, merchant(app, monkeypatch), 1)[0]
    response = _list(client, shop.api_key, f"starting_after={theirs['id']}")
    assert response.status_code == 400


@pytest.mark.parametrize("prefix", ALIASES)
def test_the_aliases_serve_the_same_routes(app, client, shop, prefix):
    (case,) = _cases(app, client, shop, 1)
    assert _ids(_list(client, shop.api_key, path=prefix)) == [case["id"]]
    one = d.call(client, shop.api_key, "GET", f"{prefix}/{case['id']}")
    assert (
        one.status_code == 200
        and one.get_json()
        == d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    )
    pdf = b"%PDF-1.7 evidence"
    ticket = client.post(
        f"{prefix}/{case['id']}/evidence",
        json={"file_name": "nf.pdf", "file_size": len(pdf), "mime_type": "application/pdf"},
        headers={"apikey": shop.api_key},
    )
    assert ticket.status_code == 201
    assert d.put_file(client, ticket.get_json(), pdf).status_code == 200
    done = d.call(
        client,
        shop.api_key,
        "POST",
        f"{prefix}/{case['id']}/evidence/{ticket.get_json()['id']}/complete",
    )
    assert done.status_code == 200
    listed = d.call(client, shop.api_key, "GET", f"{prefix}/{case['id']}/evidence")
    assert [item["id"] for item in listed.get_json()["data"]] == [ticket.get_json()["id"]]
    appeal = d.call(
        client, shop.api_key, "POST", f"{prefix}/{case['id']}/appeal", json={"reason": "Contesto"}
    )
    assert appeal.status_code == 200 and appeal.get_json()["status"] == "appealed"


@pytest.mark.parametrize("prefix", ALIASES)
def test_another_account_gets_404_on_every_case_route_and_changes_nothing(
    app, client, shop, prefix, monkeypatch
):
    (case,) = _cases(app, client, shop, 1)
    pdf = b"%PDF-1.7 evidence"
    ticket = d.ticket(client, shop.api_key, case["id"], pdf).get_json()
    d.put_file(client, ticket, pdf)
    other = factories.make_api_key(app, factories.make_account(app))
    live_same_account = factories.make_api_key(app, shop.account_id, mode=KeyMode.LIVE)
    evidence_body = {"file_name": "x.pdf", "file_size": 10, "mime_type": "application/pdf"}
    routes = [
        ("GET", f"{prefix}/{case['id']}", None),
        ("POST", f"{prefix}/{case['id']}/appeal", {"reason": "Contesto"}),
        ("POST", f"{prefix}/{case['id']}/accept", None),
        ("GET", f"{prefix}/{case['id']}/evidence", None),
        ("POST", f"{prefix}/{case['id']}/evidence", evidence_body),
        ("POST", f"{prefix}/{case['id']}/evidence/{ticket['id']}/complete", None),
    ]
    for key in (other, live_same_account):
        for method, path, body in routes:
            response = d.call(client, key, method, path, json=body)
            assert response.status_code == 404, (method, path)
            assert response.get_json()["error"]["code"] == "not_found"
        assert _ids(_list(client, key, path=prefix)) == []
    mine = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    assert (mine["status"], mine["evidence_count"]) == ("open", 0)


def test_evidence_of_another_case_is_404(app, client, shop):
    first, second = _cases(app, client, shop, 2)
    pdf = b"%PDF-1.7 evidence"
    ticket = d.ticket(client, shop.api_key, first["id"], pdf).get_json()
    d.put_file(client, ticket, pdf)
    assert d.complete(client, shop.api_key, second["id"], ticket["id"]).status_code == 404


def test_no_key_is_401(client):
    response = client.get("/v1/med/cases")
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "unauthorized"
