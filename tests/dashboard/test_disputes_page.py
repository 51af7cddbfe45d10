"""The merchant's dispute pages through real HTTP: the list with its filters, pages, deadlines
and CSV export; one case with its timeline; the appeal and accept forms and the money they
leave where the API says; the evidence upload as the page's script does it (ticket, PUT to the
signed address without cookies, complete); OWNER and ADMIN only for every action; another
account's case is a 404 everywhere; and the overview's open-disputes notice."""

import csv
import html
import io
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from app.dashboard import disputes as dispute_pages
from app.models import Role
from app.storage.local import LocalEvidenceStorage
from tests.support import disputes as d
from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.http import csrf_token
from tests.support.refunds import merchant

PAGE = "/dashboard/disputes"
CSV_URL = f"{PAGE}/export.csv"
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 4 + b"\n%%EOF"
CSV_HEADER = [
    "id",
    "created_at",
    "status",
    "type",
    "amount",
    "currency",
    "charge_id",
    "reason",
    "response_deadline",
    "evidence_count",
    "appealed_at",
    "money_outcome",
    "closed_at",
]


@pytest.fixture
def shop(app, monkeypatch, tmp_path):
    """A fee-free test merchant whose evidence goes to this test's own storage directory."""
    (tmp_path / "evidence").mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(tmp_path / "evidence"))
    return merchant(app, monkeypatch)


@pytest.fixture
def owner(app, shop):
    return factories.make_member(app, shop.account_id, Role.OWNER)


@pytest.fixture
def signed_in(client, owner):
    sign_in(client, owner)
    return owner


def _opened(app, client, shop, **report) -> dict:
    """A case on a new paid (and released) charge of the shop."""
    return d.opened(client, shop, d.paid_charge(app, client, shop)["id"], **report)


def _text(response) -> str:
    """The page as a reader sees its text: entities decoded, runs of white space as one."""
    return " ".join(html.unescape(response.get_data(as_text=True)).split())


def _listed(page: str) -> list[str]:
    """The case ids of the list's rows, in order."""
    return re.findall(r'<td class="mono"><a href="/dashboard/disputes/(med_[^"?]+)\?', page)


def _link(page: str, label: str) -> str:
    match = re.search(rf'<a href="([^"]+)"[^>]*>{label}</a>', page)
    assert match, f"no {label!r} link"
    return html.unescape(match.group(1))


def _case(client, shop, case_id: str) -> dict:
    return d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case_id}").get_json()


def _balance(client, shop) -> dict:
    return client.get("/v1/wallets/balance", headers={"apikey": shop.api_key}).get_json()


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def _deadline_in(**delta) -> str:
    return (datetime.now(UTC) + timedelta(**delta)).isoformat()


def _post(client, path: str, **fields):
    """Post a form as the browser does, with the session's CSRF token."""
    token = csrf_token(client.get(PAGE).get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **fields})


def _json(client, path: str, body: dict | None = None, token: str | None = None):
    """What the upload script sends: JSON with the page's CSRF token in X-CSRFToken."""
    return client.post(path, json=body or {}, headers={"X-CSRFToken": token or ""})


def _page_token(client, case_id: str) -> str:
    """The token the upload script reads from the case page's form."""
    return csrf_token(client.get(f"{PAGE}/{case_id}").get_data(as_text=True))


def _target(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


# The list


def test_nav_lists_disputes_after_payments_and_the_empty_state_says_nothing_is_due(
    client, signed_in
):
    page = client.get(PAGE)
    assert page.status_code == 200
    text = _text(page)
    assert '<a href="/dashboard/disputes" aria-current="page">Disputes</a>' in text
    assert text.index(">Payments</a>") < text.index(">Disputes</a>") < text.index(">Wallets</a>")
    assert "No test disputes: nothing needs doing." in text
    assert "A dispute opens when a payer's bank contests a paid payment" in text
    assert "<code>POST /v1/sandbox/charges/{id}/dispute</code>" in page.get_data(as_text=True)
    for label in ("status-filter", "type-filter", "charge-filter", "created-from", "created-to"):
        assert f'<label for="{label}">' in text, label
    live = _text(client.get(f"{PAGE}?mode=live"))
    assert "No live disputes: nothing needs doing." in live and "/v1/sandbox" not in live


def test_each_row_shows_amount_status_type_charge_deadline_and_evidence(
    app, client, shop, signed_in
):
    soon = _opened(app, client, shop, response_deadline=_deadline_in(days=2, hours=4, minutes=30))
    late = _opened(app, client, shop, type="chargeback", response_deadline=_deadline_in(hours=5))
    d.update_case(app, late["id"], response_deadline=d.past(minutes=1))
    ticket = d.ticket(client, shop.api_key, soon["id"], PDF).get_json()
    assert d.put_file(client, ticket, PDF).status_code == 200
    assert d.complete(client, shop.api_key, soon["id"], ticket["id"]).status_code == 200

    text = _text(client.get(PAGE))
    assert _listed(text) == [late["id"], soon["id"]]  # newest first
    row = text[text.index(soon["id"]) : text.index("</tr>", text.index(soon["id"]))]
    assert '<td class="amount">R$123.45</td>' in row
    assert ">Open</span>" in row and "<td>MED</td>" in row
    assert f'href="/dashboard/payments/{soon["charge_id"]}?mode=test"' in row
    assert "2 days 4 h left" in row
    assert "<td>1</td>" in row  # confirmed evidence
    late_row = text[text.index(late["id"]) : text.index("</tr>", text.index(late["id"]))]
    assert "overdue" in late_row and "<td>Chargeback</td>" in late_row and "<td>0</td>" in late_row


def test_filters_narrow_the_list_and_every_link_keeps_them(app, client, shop, signed_in):
    appealed = _opened(app, client, shop)
    chargeback = _opened(app, client, shop, type="chargeback")
    old = _opened(app, client, shop)
    d.call(client, shop.api_key, "POST", f"/v1/med/cases/{appealed['id']}/appeal",
           json={"reason": "Delivered and signed for"})  # fmt: skip
    d.update_case(app, old["id"], created_at=datetime(2026, 3, 10, 15, tzinfo=UTC))

    def listed(query: str) -> list[str]:
        response = client.get(f"{PAGE}?{query}")
        assert response.status_code == 200, query
        return _listed(_text(response))

    assert listed("status=appealed") == [appealed["id"]]
    assert listed("type=chargeback") == [chargeback["id"]]
    assert listed(f"charge_id={old['charge_id']}") == [old["id"]]
    assert listed("created_from=2026-03-10&created_to=2026-03-10") == [old["id"]]
    assert listed("created_to=2026-03-09") == []
    assert old["id"] not in listed("created_from=2026-03-11")

    text = _text(client.get(f"{PAGE}?status=open&type=med&created_from=2026-01-01"))
    assert '<option value="open" selected>' in text and '<option value="med" selected>' in text
    assert 'value="01/01/2026"' in text
    csv_link = _link(text, "Download these disputes as CSV")
    assert csv_link.startswith(CSV_URL) and "status=open" in csv_link and "type=med" in csv_link
    live = _link(text, "Live mode")
    assert "mode=live" in live and "status=open" in live and "created_from=2026-01-01" in live
    empty = client.get(f"{PAGE}?status=open&created_to=2020-01-01")
    assert "No open test disputes match these filters." in _text(empty)
    raw = " ".join(empty.get_data(as_text=True).split())
    assert (
        'or <a href="/dashboard/disputes?mode=test">show all test disputes</a>.' in raw
    )  # a link, not escaped markup


@pytest.mark.parametrize(
    "query",
    [
        "status=won",
        "type=pix",
        "mode=prod",
        "charge_id=tx_1",
        "created_from=32/03/2026",
        "created_from=2026-03-11&created_to=2026-03-10",
        "starting_after=med_unknown",
    ],
)
def test_a_bad_filter_is_a_400_page(client, signed_in, query):
    response = client.get(f"{PAGE}?{query}")
    assert response.status_code == 400
    assert "text/html" in response.headers["Content-Type"]


def test_pages_follow_the_cursor(app, client, shop, signed_in, monkeypatch):
    monkeypatch.setattr(dispute_pages, "PAGE_SIZE", 2)
    cases = [_opened(app, client, shop)["id"] for _ in range(3)]
    first = _text(client.get(f"{PAGE}?type=med"))
    assert _listed(first) == cases[:0:-1]
    assert "First page" not in first
    second = _text(client.get(_link(first, "Next page")))
    assert "type=med" in _link(first, "Next page")
    assert _listed(second) == [cases[0]]
    assert "Next page" not in second
    assert _listed(_text(client.get(_link(second, "First page")))) == cases[:0:-1]


def test_the_csv_is_exactly_the_filtered_list_across_pages(
    app, client, shop, signed_in, monkeypatch
):
    monkeypatch.setattr(dispute_pages, "EXPORT_CHUNK", 2)
    formula = _opened(app, client, shop, reason="=HYPERLINK(1)")
    others = [_opened(app, client, shop)["id"] for _ in range(2)]
    accepted = _opened(app, client, shop)
    d.call(client, shop.api_key, "POST", f"/v1/med/cases/{accepted['id']}/accept")

    response = client.get(f"{CSV_URL}?status=open")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert 'filename="disputes-test.csv"' in response.headers["Content-Disposition"]
    assert response.is_streamed
    rows = _csv(response)
    assert rows[0] == CSV_HEADER
    assert [row[0] for row in rows[1:]] == [*others[::-1], formula["id"]]
    line = dict(zip(CSV_HEADER, rows[-1], strict=True))
    assert line["status"] == "open" and line["type"] == "med"
    assert (line["amount"], line["currency"]) == ("12345", "BRL")
    assert line["charge_id"] == formula["charge_id"]
    assert line["reason"] == "'=HYPERLINK(1)"  # never run as a formula
    assert line["created_at"].endswith("Z") and line["response_deadline"].endswith("Z")
    assert line["evidence_count"] == "0" and line["money_outcome"] == ""
    everything = _csv(client.get(CSV_URL))
    assert len(everything) == 5
    lost = next(row for row in everything if row[0] == accepted["id"])
    assert lost[CSV_HEADER.index("money_outcome")] == "lost"
    assert _csv(client.get(f"{CSV_URL}?mode=live")) == [CSV_HEADER]


# One case


def test_the_case_page_shows_every_field_and_the_timeline_in_order(app, client, shop, signed_in):
    case = _opened(
        app,
        client,
        shop,
        reason="Não reconheço",
        method="unauthorized",
        payer_name="Ana Souza",
        response_deadline=_deadline_in(days=1, hours=2, minutes=30),
    )
    path = f"/v1/med/cases/{case['id']}"
    d.call(client, shop.api_key, "POST", f"/v1/sandbox/med/cases/{case['id']}/request-evidence")
    ticket = d.ticket(client, shop.api_key, case["id"], PDF).get_json()
    d.put_file(client, ticket, PDF)
    d.complete(client, shop.api_key, case["id"], ticket["id"])
    d.call(client, shop.api_key, "POST", f"{path}/appeal", json={"reason": "Entregue ao cliente"})

    page = client.get(f"{PAGE}/{case['id']}")
    assert page.status_code == 200
    text = _text(page)
    for shown in (
        case["id"],
        "R$123.45",
        "Não reconheço",
        "Transaction not authorised",
        "Ana Souza",
        "MED",
    ):
        assert shown in text, shown
    assert f'href="/dashboard/payments/{case["charge_id"]}?mode=test"' in text
    assert "1 day 2 h left" in text
    timeline = text[text.index('id="case-timeline"') :]
    steps = [
        "Dispute opened",
        "R$123.45 held from your available balance until the decision.",
        "Evidence requested",
        "Evidence attached",
        "receipt.pdf, from the merchant",
        "You appealed",
        "Entregue ao cliente",
    ]
    positions = [timeline.index(step) for step in steps]
    assert positions == sorted(positions)
    assert "You appealed: the amount stays held" in text
    assert "Send appeal" not in text and "Accept the dispute" not in text

    assert d.decide(client, shop.api_key, case["id"], "refunded_to_merchant").status_code == 200
    text = _text(client.get(f"{PAGE}/{case['id']}"))
    closing = text[text.index("<strong>Closed</strong>") :]
    assert "Money outcome: Kept by you: the held amount is back in your available" in closing
    assert "left</strong>" not in text  # no countdown once decided
    assert "Attach evidence" not in text


def test_a_case_whose_amount_differs_says_nothing_was_held(app, client, shop, signed_in):
    case = _opened(app, client, shop, amount=999)
    text = _text(client.get(f"{PAGE}/{case['id']}"))
    assert "so nothing was held from your wallet" in text
    assert "nothing was held; our operations team is handling the case." in text


# Appeal and accept


def test_an_owner_appeals_and_the_amount_stays_held(app, client, shop, signed_in):
    case = _opened(app, client, shop)
    detail = f"{PAGE}/{case['id']}"
    text = _text(client.get(detail))
    assert '<label for="reason">Why you contest this dispute</label>' in text
    assert "<textarea" in text and 'maxlength="2000"' in text
    held = _balance(client, shop)

    short = _post(client, f"{detail}/appeal?mode=test", reason="no")
    assert short.status_code == 400
    assert "The appeal was not sent." in _text(short) and "Write 5 to 2000 characters." in _text(
        short
    )
    assert _case(client, shop, case["id"])["status"] == "open"

    response = _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue")
    assert response.status_code == 303
    assert response.headers["Location"].endswith(f"{detail}?mode=test")
    assert "Appeal sent: the amount stays held" in _text(client.get(detail))
    after = _case(client, shop, case["id"])
    assert (after["status"], after["appeal_reason"]) == ("appealed", "Produto entregue")
    assert _balance(client, shop) == held

    again = _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue de novo")
    assert again.status_code == 303  # the service's refusal is a message, not an error page
    assert "Only an open case can be appealed; this one is Appealed." in _text(client.get(detail))


def test_appealing_a_case_that_held_nothing_never_says_money_is_held(app, client, shop, signed_in):
    """Issue 21: "the amount stays held" stood beside "Held from your wallet R$0.00"."""
    case = _opened(app, client, shop, amount=999)  # differs from the charge's: nothing held
    detail = f"{PAGE}/{case['id']}"

    response = _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue")

    assert response.status_code == 303
    text = _text(client.get(detail))
    assert 'Held from your wallet</dt><dd class="amount">R$0.00</dd>' in text
    assert (
        "Appeal sent: nothing was held from your wallet for this dispute, so no money waits on it."
    ) in text
    assert "You appealed: nothing was held from your wallet for this dispute" in text
    assert "stays held" not in text


def test_appealing_a_case_confirmed_at_another_amount_names_what_is_held(
    app, client, shop, signed_in
):
    case = _opened(app, client, shop, amount=999)
    d.update_case(app, case["id"], held_amount=500, hold_limit=500, under_review=False)
    detail = f"{PAGE}/{case['id']}"

    _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue")

    text = _text(client.get(detail))
    assert "Appeal sent: R$5.00 stays held from your wallet until the dispute is decided." in text
    assert "You appealed: R$5.00 stays held from your wallet" in text


def test_accepting_needs_the_confirmation_and_loses_the_amount(app, client, shop, signed_in):
    case = _opened(app, client, shop)
    detail = f"{PAGE}/{case['id']}"
    text = _text(client.get(detail))
    assert "Accepting is final:</strong> R$123.45 goes back to the payer" in text
    assert 'data-confirm="Accept this dispute? R$123.45 is lost' in text
    assert _balance(client, shop)["retained"] == 12345

    unconfirmed = _post(client, f"{detail}/accept?mode=test")
    assert unconfirmed.status_code == 400
    assert "Tick the box to confirm that you accept the loss." in _text(unconfirmed)
    assert _case(client, shop, case["id"])["status"] == "open"

    response = _post(client, f"{detail}/accept?mode=test", understood="y")
    assert response.status_code == 303
    assert "You accepted the dispute: R$123.45 is returned to the payer." in _text(
        client.get(detail)
    )
    after = _case(client, shop, case["id"])
    assert (after["status"], after["money_outcome"]) == ("accepted", "lost")
    balance = _balance(client, shop)
    assert (balance["available"], balance["retained"]) == (0, 0)
    text = _text(client.get(detail))
    assert "You accepted the dispute" in text[text.index('id="case-timeline"') :]
    assert "the held amount was returned to the payer" in text


# Evidence, as the page's script sends it


def test_the_page_carries_the_upload_form_its_script_and_a_noscript_message(
    app, client, shop, signed_in
):
    case = _opened(app, client, shop)
    response = client.get(f"{PAGE}/{case['id']}")
    text = _text(response)
    assert '<form id="evidence-upload"' in text and " hidden" in text
    assert f'data-ticket-url="{PAGE}/{case["id"]}/evidence?mode=test"' in text
    assert '<script src="/static/evidence-upload.js" defer></script>' in text
    assert "<noscript>" in text and f"POST /v1/med/cases/{case['id']}/evidence" in text
    assert 'aria-live="polite"' in text
    assert 'accept="application/pdf,image/gif,image/jpeg,image/png,image/webp"' in text
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert "connect-src 'self' http://localhost;" in response.headers["Content-Security-Policy"]
    script = client.get("/static/evidence-upload.js").get_data(as_text=True)
    assert '"X-CSRFToken": csrfToken' in script and 'credentials: "omit"' in script


def test_an_upload_goes_ticket_put_complete_and_is_listed_with_a_view_link(
    app, client, shop, signed_in
):
    case = _opened(app, client, shop)
    token = _page_token(client, case["id"])
    body = {"file_name": "nota fiscal.pdf", "file_size": len(PDF), "mime_type": "application/pdf"}
    response = _json(client, f"{PAGE}/{case['id']}/evidence?mode=test", body, token)
    assert response.status_code == 201, response.get_json()
    ticket = response.get_json()
    assert ticket["object"] == "med_case_evidence_upload" and ticket["upload_method"] == "PUT"
    assert ticket["upload_headers"] == {
        "Content-Type": "application/pdf",
        "Content-Length": str(len(PDF)),
    }
    assert ticket["complete_url"] == (
        f"{PAGE}/{case['id']}/evidence/{ticket['id']}/complete?mode=test"
    )

    browser_without_cookies = app.test_client()
    stored = browser_without_cookies.put(
        _target(ticket["upload_url"]), data=PDF, headers=ticket["upload_headers"]
    )
    assert stored.status_code == 200, stored.get_json()

    completed = _json(client, ticket["complete_url"], token=token)
    assert completed.status_code == 200, completed.get_json()
    evidence = completed.get_json()
    assert (evidence["id"], evidence["file_name"]) == (ticket["id"], "nota fiscal.pdf")
    assert evidence["uploaded_by"] == "merchant" and evidence["uploaded_at"]
    assert _json(client, ticket["complete_url"], token=token).get_json()["id"] == ticket["id"]

    text = _text(client.get(f"{PAGE}/{case['id']}"))
    assert "Evidence attached: nota fiscal.pdf." in text  # the flash the reload shows
    link = re.search(r'<a href="([^"]+)" target="_blank" rel="noopener">nota fiscal.pdf</a>', text)
    assert link, "no view link"
    view = browser_without_cookies.get(_target(html.unescape(link.group(1))))
    assert view.status_code == 200 and view.data == PDF
    assert view.headers["Content-Type"] == "application/pdf"
    assert _case(client, shop, case["id"])["evidence_count"] == 1


def test_upload_refusals_are_json_envelopes_the_script_can_show(
    app, client, shop, signed_in, monkeypatch
):
    case = _opened(app, client, shop)
    token = _page_token(client, case["id"])
    tickets = f"{PAGE}/{case['id']}/evidence?mode=test"

    def refused(response, status: int, code: str) -> str:
        assert response.status_code == status, response.get_data(as_text=True)
        assert response.is_json
        body = response.get_json()
        assert body["error"]["code"] == code and body["request_id"]
        return body["error"]["message"]

    wrong_type = {"file_name": "a.exe", "file_size": 10, "mime_type": "application/x-msdownload"}
    assert "mime_type is one of" in refused(
        _json(client, tickets, wrong_type, token), 400, "invalid_request"
    )
    too_big = {"file_name": "a.pdf", "file_size": 11 * 1024 * 1024, "mime_type": "application/pdf"}
    refused(_json(client, tickets, too_big, token), 400, "invalid_request")
    refused(_json(client, tickets, {"file_name": "a/b.pdf"}, token), 400, "invalid_request")
    refused(client.post(tickets, data="[]", headers={"X-CSRFToken": token,
            "Content-Type": "application/json"}), 400, "invalid_request")  # fmt: skip

    body = {"file_name": "a.pdf", "file_size": len(PDF), "mime_type": "application/pdf"}
    ticket = _json(client, tickets, body, token).get_json()
    assert "No file has been uploaded" in refused(
        _json(client, ticket["complete_url"], token=token), 409, "EVIDENCE_NOT_UPLOADED"
    )
    refused(
        _json(client, f"{PAGE}/{case['id']}/evidence/medev_nope/complete?mode=test", token=token),
        404,
        "not_found",
    )
    monkeypatch.setattr(LocalEvidenceStorage, "healthy", lambda self: False)
    refused(_json(client, tickets, body, token), 503, "service_unavailable")
    assert _case(client, shop, case["id"])["evidence_count"] == 0


def test_the_upload_endpoints_need_the_csrf_token(app, client, shop, signed_in):
    case = _opened(app, client, shop)
    body = {"file_name": "a.pdf", "file_size": len(PDF), "mime_type": "application/pdf"}
    response = client.post(f"{PAGE}/{case['id']}/evidence?mode=test", json=body)
    assert response.status_code == 400
    assert "This form has expired" in _text(response)


# Roles and accounts


def test_a_member_reads_but_gets_403_on_every_action(app, client, shop):
    case = _opened(app, client, shop)
    member = factories.make_member(app, shop.account_id, Role.MEMBER)
    sign_in(client, member)
    detail = f"{PAGE}/{case['id']}"
    text = _text(client.get(detail))
    assert "Only an OWNER or ADMIN of the account can answer disputes" in text
    assert "Send appeal" not in text and "Accept the dispute" not in text
    assert 'id="evidence-upload"' not in text
    assert client.get(CSV_URL).status_code == 200

    appeal = _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue")
    accept = _post(client, f"{detail}/accept?mode=test", understood="y")
    assert appeal.status_code == accept.status_code == 403
    assert "Only an OWNER or ADMIN" in _text(appeal)
    token = _page_token(client, case["id"])
    body = {"file_name": "a.pdf", "file_size": len(PDF), "mime_type": "application/pdf"}
    for path in (f"{detail}/evidence?mode=test", f"{detail}/evidence/medev_1/complete?mode=test"):
        response = _json(client, path, body, token)
        assert response.status_code == 403, path
        assert response.get_json()["error"]["code"] == "DISPUTE_ROLE_REQUIRED"
    after = _case(client, shop, case["id"])
    assert (after["status"], after["evidence_count"]) == ("open", 0)


def test_an_admin_may_answer(app, client, shop):
    case = _opened(app, client, shop)
    sign_in(client, factories.make_member(app, shop.account_id, Role.ADMIN))
    detail = f"{PAGE}/{case['id']}"
    assert _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue").status_code == 303
    assert _case(client, shop, case["id"])["status"] == "appealed"


def test_another_accounts_case_is_404_on_every_merchant_route(
    app, client, shop, signed_in, monkeypatch
):
    stranger = merchant(app, monkeypatch)
    theirs = _opened(app, client, stranger)
    mine = _opened(app, client, shop)
    token = _page_token(client, mine["id"])
    for case_id in (theirs["id"], "med_nope"):
        detail = f"{PAGE}/{case_id}"
        assert client.get(detail).status_code == 404
        assert (
            _post(client, f"{detail}/appeal?mode=test", reason="Produto entregue").status_code
            == 404
        )
        assert _post(client, f"{detail}/accept?mode=test", understood="y").status_code == 404
        body = {"file_name": "a.pdf", "file_size": 10, "mime_type": "application/pdf"}
        for path in (
            f"{detail}/evidence?mode=test",
            f"{detail}/evidence/medev_1/complete?mode=test",
        ):
            response = _json(client, path, body, token)
            assert response.status_code == 404, path
            assert response.get_json()["error"]["code"] == "not_found"
    assert client.get(f"{PAGE}/{mine['id']}?mode=live").status_code == 404
    assert theirs["id"] not in _text(client.get(PAGE))
    assert _csv(client.get(f"{CSV_URL}?charge_id={theirs['charge_id']}")) == [CSV_HEADER]
    assert _case(client, stranger, theirs["id"])["status"] == "open"


# The overview


def test_the_overview_lists_open_disputes_most_urgent_first(app, client, shop, signed_in):
    assert "Open disputes" not in _text(client.get("/dashboard/"))
    later = _opened(app, client, shop, response_deadline=_deadline_in(days=3, hours=1))
    sooner = _opened(app, client, shop, response_deadline=_deadline_in(hours=5, minutes=30))
    decided = _opened(app, client, shop)
    d.decide(client, shop.api_key, decided["id"], "rejected")

    text = _text(client.get("/dashboard/"))
    notice = text[text.index("Open disputes") :]
    assert f'href="{PAGE}/{sooner["id"]}?mode=test"' in notice
    assert notice.index(sooner["id"]) < notice.index(later["id"])
    assert "5 h 29 min left" in notice or "5 h 30 min left" in notice
    assert "3 days 1 h left" in notice or "3 days 0 h left" in notice
    assert decided["id"] not in notice
    assert "R$123.45" in notice
