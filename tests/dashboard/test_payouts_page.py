"""The payouts page: the list with its filters and pages, its CSV export, the Pix payout
request form (the service's rules shown on the form), and cancelling a request while it is
PENDING."""

import csv
import html
import io
import re
import uuid

import pytest
import sqlalchemy as sa

from app.dashboard import payouts as payouts_page_module
from app.extensions import db
from app.models import KeyMode, Payout, PayoutStatus, PayoutType, Role
from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.http import count_rows, csrf_token
from tests.support.payouts import available, funded_merchant, request, run_jobs, staff_headers

PAGE = "/dashboard/payouts"
CSV_URL = f"{PAGE}/export.csv"
CSV_HEADER = [
    "id",
    "created_at",
    "status",
    "type",
    "amount",
    "fee",
    "wallet_debit",
    "currency",
    "destination",
    "description",
    "failure_reason",
    "completed_at",
]
UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture
def merchant(app, client, monkeypatch):
    return funded_merchant(app, client, monkeypatch)


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _form(client, page: str = PAGE, **fields) -> dict:
    """The request form as rendered (its mode and idempotency key), with `fields` filled in."""
    text = client.get(page).get_data(as_text=True)
    key = re.search(r'name="idempotency_key" type="hidden" value="([0-9a-f]+)"', text).group(1)
    mode = re.search(r'name="mode" type="hidden" value="(test|live)"', text).group(1)
    data = {
        "amount": "100,00",
        "pix_key": "ana@example.com",
        "pix_key_type": "EMAIL",
        "description": "Saque semanal",
    }
    return {"csrf_token": csrf_token(text), "idempotency_key": key, "mode": mode, **data, **fields}


def _rows(page: str) -> int:
    return page.count('<td class="mono destination">')


def _payout(app) -> Payout:
    with app.app_context():
        return db.session.scalar(sa.select(Payout))


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def _live_payout(app, account_id: str) -> str:
    """A live payout as stored (the tests have no live provider to request one through)."""
    with app.app_context():
        payout = Payout(
            account_id=account_id,
            mode=KeyMode.LIVE,
            status=PayoutStatus.PENDING,
            type=PayoutType.PIX,
            amount=5_000,
            fee=100,
            currency="BRL",
            pix_key="bia@example.com",
            pix_key_type="EMAIL",
        )
        db.session.add(payout)
        db.session.commit()
        return payout.id


def test_the_page_offers_the_form_to_an_owner(client, merchant):
    sign_in(client, merchant.member)
    response = client.get(PAGE)
    assert response.status_code == 200
    text = _text(response)
    assert '<a href="/dashboard/payouts" aria-current="page">Payouts</a>' in text
    assert "Available in your test wallet: <strong>R$1,000.00</strong>" in text
    assert "Request a Pix payout" in text and "No test payouts yet." in text
    for name in ("amount", "pix_key", "pix_key_type", "description", "status-filter"):
        assert f'<label for="{name}">' in text, name
    assert '<option value="EVP">Random key (EVP)</option>' in text


def test_a_request_is_pending_and_listed(app, client, merchant):
    sign_in(client, merchant.member)
    response = client.post(PAGE, data=_form(client))
    assert response.status_code == 303
    assert response.headers["Location"] == "/dashboard/payouts?mode=test"
    payout = _payout(app)
    assert (payout.amount, payout.fee, payout.status) == (10_000, 100, PayoutStatus.PENDING)
    assert (payout.mode, payout.pix_key, payout.pix_key_type) == (
        KeyMode.TEST,
        "ana@example.com",
        "EMAIL",
    )
    assert payout.description == "Saque semanal"
    assert payout.requested_by_user_id == merchant.member.user_id
    text = _text(client.get(response.headers["Location"]))
    assert "Payout of R$100.00 to ana@example.com (EMAIL) requested: Waiting for approval." in text
    assert 'class="badge status-pending">Waiting for approval<' in text
    # the fee is added on top: the wallet gives amount + fee, the recipient gets the amount
    assert 'Wallet debit <span class="muted">(amount + fee)</span></th>' in text
    cells = re.findall(r'<td class="amount">([^<]+)</td>', text)
    assert cells == ["R$100.00", "R$1.00", "R$101.00"]
    assert "Net</th>" not in text and "R$99.00" not in text
    assert f'action="/dashboard/payouts/{payout.id}/cancel?mode=test"' in text
    assert 'data-confirm="Cancel the R$100.00 payout to ana@example.com (EMAIL)?"' in text
    assert available(client, merchant) == 100_000  # nothing debited before approval


def test_an_invalid_pix_key_is_shown_beside_the_field(app, client, merchant):
    sign_in(client, merchant.member)
    for key, key_type in (("ana@", "EMAIL"), ("52998224700", "CPF"), ("5511987654321", "PHONE")):
        response = client.post(PAGE, data=_form(client, pix_key=key, pix_key_type=key_type))
        assert response.status_code == 400, key
        text = _text(response)
        assert "Invalid Pix key:" in text, key
        assert 'id="pix_key-error"' in text and 'aria-invalid="true"' in text
        assert f'value="{key}"' in text  # what was typed is shown back
    assert count_rows(app, Payout) == 0


def test_the_form_checks_what_it_must_before_asking_the_service(app, client, merchant):
    sign_in(client, merchant.member)
    cases = {
        "amount": ({"amount": "0"}, "Enter an amount greater than zero."),
        "pix_key": ({"pix_key": ""}, "Enter the Pix key to pay."),
        "pix_key_type": ({"pix_key_type": ""}, "Choose the key type."),
    }
    for field, (fields, message) in cases.items():
        response = client.post(PAGE, data=_form(client, **fields))
        assert response.status_code == 400, field
        text = _text(response)
        assert message in text and f'id="{field}-error"' in text, field
    response = client.post(PAGE, data=_form(client, mode="prod"))
    assert response.status_code == 400
    assert "Mode:" in _text(response)
    assert count_rows(app, Payout) == 0


def test_insufficient_funds_are_refused_on_the_amount(app, client, merchant):
    sign_in(client, merchant.member)
    response = client.post(PAGE, data=_form(client, amount="1000,00"))  # + R$1.00 fee
    assert response.status_code == 400
    text = _text(response)
    assert "does not cover the amount plus fee" in text and 'id="amount-error"' in text
    assert count_rows(app, Payout) == 0


def test_live_mode_without_a_live_provider_is_422(app, client, merchant):
    sign_in(client, merchant.member)
    live = _text(client.get(f"{PAGE}?mode=live"))
    assert "Request live payout" in live
    response = client.post(PAGE, data=_form(client, f"{PAGE}?mode=live"))
    assert response.status_code == 422
    text = _text(response)
    assert "No provider serves Pix in live mode" in text
    assert 'aria-current="page">Live mode</a>' in text
    assert count_rows(app, Payout) == 0


def test_double_submit_makes_one_payout(app, client, merchant):
    sign_in(client, merchant.member)
    data = _form(client)
    first, second = client.post(PAGE, data=data), client.post(PAGE, data=data)
    assert first.status_code == second.status_code == 303
    assert count_rows(app, Payout) == 1
    changed = client.post(PAGE, data={**data, "amount": "50,00"})
    assert changed.status_code == 409
    assert "already sent with other values" in _text(changed)
    assert count_rows(app, Payout) == 1


def test_a_refused_form_can_be_sent_again_with_the_same_key(app, client, merchant):
    sign_in(client, merchant.member)
    data = _form(client, pix_key="ana@")
    assert client.post(PAGE, data=data).status_code == 400
    assert client.post(PAGE, data={**data, "pix_key": "ana@example.com"}).status_code == 303
    assert count_rows(app, Payout) == 1


def test_a_member_sees_a_note_and_is_refused_by_the_service(app, client, merchant):
    member = factories.make_member(app, merchant.member.account_id, Role.MEMBER)
    sign_in(client, member)
    page = client.get(PAGE).get_data(as_text=True)
    assert "Only an OWNER or ADMIN of the account can request payouts." in page
    assert 'name="idempotency_key"' not in page
    data = {
        "csrf_token": csrf_token(page),
        "idempotency_key": uuid.uuid4().hex,
        "mode": "test",
        "amount": "100,00",
        "pix_key": "ana@example.com",
        "pix_key_type": "EMAIL",
    }
    response = client.post(PAGE, data=data)
    assert response.status_code == 403
    assert "Only the account's OWNER or ADMIN may request payouts." in _text(response)
    assert count_rows(app, Payout) == 0


def test_cancel_works_only_while_pending(app, client, merchant):
    staff = staff_headers(app, client)
    kept = request(client, merchant).json["id"]
    approved = request(client, merchant).json["id"]
    client.post(f"/v1/admin/withdrawals/{approved}/approve", headers=staff)
    sign_in(client, merchant.member)
    page = client.get(PAGE).get_data(as_text=True)
    assert f"/{kept}/cancel" in page and f"/{approved}/cancel" not in page
    token = csrf_token(page)

    response = client.post(
        f"{PAGE}/{kept}/cancel?mode=test&status=PENDING", data={"csrf_token": token}
    )
    assert response.status_code == 303
    assert response.headers["Location"] == "/dashboard/payouts?mode=test&status=PENDING"
    text = _text(client.get(PAGE))
    assert "Payout of R$100.00 cancelled." in text
    assert 'class="badge status-cancelled">Cancelled<' in text

    for payout_id, status in ((kept, "Cancelled"), (approved, "Approved")):
        response = client.post(f"{PAGE}/{payout_id}/cancel", data={"csrf_token": token})
        assert response.status_code == 303
        text = _text(client.get(response.headers["Location"]))
        assert f"Only a PENDING withdrawal can be cancelled; this one is {status}." in text
    statuses = {
        body["id"]: body["status"]
        for body in client.get("/v1/withdrawals", headers=merchant.headers).json["data"]
    }
    assert statuses == {kept: "CANCELLED", approved: "APPROVED"}


def test_cancel_needs_csrf_and_the_payout_of_this_account(app, client, merchant, monkeypatch):
    other = funded_merchant(app, client, monkeypatch)
    foreign = request(client, other).json["id"]
    mine = request(client, merchant).json["id"]
    sign_in(client, merchant.member)
    assert client.post(f"{PAGE}/{mine}/cancel").status_code == 400
    token = csrf_token(client.get(PAGE).get_data(as_text=True))
    assert client.post(f"{PAGE}/{foreign}/cancel", data={"csrf_token": token}).status_code == 404
    assert client.post(f"{PAGE}/nope/cancel", data={"csrf_token": token}).status_code == 404
    bodies = client.get("/v1/withdrawals", headers=other.headers).json["data"]
    assert bodies[0]["status"] == "PENDING"
    assert (
        client.get(f"/v1/withdrawals/{mine}", headers=merchant.headers).json["status"] == "PENDING"
    )
    assert foreign not in client.get(PAGE).get_data(as_text=True)


def test_filters_and_pages_keep_each_other(app, client, merchant):
    ids = [request(client, merchant, amount=1_000 + n).json["id"] for n in range(23)]
    client.post(f"/v1/withdrawals/{ids[0]}/cancel", headers=merchant.headers)
    sign_in(client, merchant.member)

    first = _text(client.get(PAGE))
    assert _rows(first) == 20
    assert "Page 1 of 2 (23 payouts)" in first and "Previous page" not in first
    assert first.index("R$10.22") < first.index("R$10.03")  # newest first
    next_link = re.search(r'<a href="([^"]+)">Next page</a>', first).group(1)
    assert "page=2" in next_link and "mode=test" in next_link
    second = _text(client.get(next_link))
    assert _rows(second) == 3 and "Next page" not in second and "Previous page" in second

    pending = _text(client.get(f"{PAGE}?status=PENDING&page=2"))
    csv_link = re.search(r'<a href="([^"]+)" download>Download these payouts as CSV', pending)
    assert csv_link.group(1) == f"{CSV_URL}?mode=test&status=PENDING"  # every page
    pending = _text(client.get(f"{PAGE}?status=PENDING"))
    assert '<option value="PENDING" selected>' in pending
    next_link = re.search(r'<a href="([^"]+)">Next page</a>', pending).group(1)
    assert "status=PENDING" in next_link and "page=2" in next_link
    assert _rows(_text(client.get(next_link))) == 2
    cancelled = _text(client.get(f"{PAGE}?status=CANCELLED"))
    assert _rows(cancelled) == 1 and "R$10.00" in cancelled and "/cancel" not in cancelled
    assert "No live payouts yet." in _text(client.get(f"{PAGE}?mode=live"))
    assert "No Completed test payouts here." in _text(client.get(f"{PAGE}?status=COMPLETED"))
    assert "No test payouts here." in _text(client.get(f"{PAGE}?page=9"))


def test_nonsense_filters_are_400(client, merchant):
    sign_in(client, merchant.member)
    for query in ("status=pending", "status=bogus", "mode=prod", "page=0", "page=x"):
        assert client.get(f"{PAGE}?{query}").status_code == 400, query
        assert client.get(f"{CSV_URL}?{query}").status_code == 400, query


def test_pages_need_a_signed_in_member(client):
    for path in (PAGE, CSV_URL):
        response = client.get(path)
        assert response.status_code == 302
        assert "/dashboard/login" in response.headers["Location"]


# The CSV export


def test_the_csv_export_streams_the_filtered_list_in_chunks(
    app, client, redis, merchant, monkeypatch, chunk_sizes
):
    ids = [request(client, merchant, amount=1_000 + n).json["id"] for n in range(5)]
    client.post(f"/v1/withdrawals/{ids[0]}/cancel", headers=merchant.headers)
    client.post(f"/v1/admin/withdrawals/{ids[1]}/approve", headers=staff_headers(app, client))
    run_jobs(app, redis)
    monkeypatch.setattr(payouts_page_module, "EXPORT_CHUNK", 2)
    sign_in(client, merchant.member)

    chunk_sizes.clear()
    response = client.get(f"{CSV_URL}?status=PENDING")
    assert response.status_code == 200
    assert response.is_streamed
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == 'attachment; filename="payouts-test.csv"'
    rows = _csv(response)
    assert [size for size in chunk_sizes if size] == [2]  # one query, read two rows at a time
    assert rows[0] == CSV_HEADER
    assert [row[0] for row in rows[1:]] == ids[:1:-1]  # the three pending ones, newest first
    row = dict(zip(CSV_HEADER, rows[-1], strict=True))
    assert UTC_TIME.fullmatch(row.pop("created_at"))
    assert row == {
        "id": ids[2],
        "status": "PENDING",
        "type": "PIX",
        "amount": "1002",
        "fee": "100",
        "wallet_debit": "1102",
        "currency": "BRL",
        "destination": "ana@example.com (EMAIL)",
        "description": "Saque semanal",
        "failure_reason": "",
        "completed_at": "",
    }

    every = _csv(client.get(CSV_URL))
    assert [row[0] for row in every[1:]] == ids[::-1]
    statuses = {row[0]: (row[2], row[11]) for row in every[1:]}
    assert statuses[ids[0]] == ("CANCELLED", "")
    assert statuses[ids[1]][0] == "COMPLETED" and UTC_TIME.fullmatch(statuses[ids[1]][1])
    assert _csv(client.get(f"{CSV_URL}?status=FAILED")) == [CSV_HEADER]


def test_the_csv_export_keeps_test_and_live_apart(app, client, merchant):
    mine = request(client, merchant).json["id"]
    live = _live_payout(app, merchant.member.account_id)
    sign_in(client, merchant.member)
    assert [row[0] for row in _csv(client.get(CSV_URL))[1:]] == [mine]
    response = client.get(f"{CSV_URL}?mode=live")
    assert response.headers["Content-Disposition"] == 'attachment; filename="payouts-live.csv"'
    assert [row[0] for row in _csv(response)[1:]] == [live]
    live_page = _text(client.get(f"{PAGE}?mode=live"))
    assert f'href="{CSV_URL}?mode=live" download>' in live_page


def test_the_csv_export_has_only_this_accounts_payouts(app, client, merchant, monkeypatch):
    other = funded_merchant(app, client, monkeypatch)
    theirs = request(client, other).json["id"]
    _live_payout(app, other.member.account_id)
    mine = request(client, merchant).json["id"]
    sign_in(client, merchant.member)
    for query in ("", "?status=PENDING", "?mode=live"):
        exported = client.get(f"{CSV_URL}{query}").get_data(as_text=True)
        assert theirs not in exported and "bia@example.com" not in exported, query
    assert [row[0] for row in _csv(client.get(CSV_URL))[1:]] == [mine]


def test_the_csv_export_never_hands_a_spreadsheet_a_formula(app, client, merchant):
    request(client, merchant, description='=HYPERLINK("http://evil.example")')
    phone = request(client, merchant, pixKey="+5511987654321", pixKeyType="PHONE").json["id"]
    client.post(
        f"/v1/admin/withdrawals/{phone}/reject",
        json={"reason": "@SUM(A1)"},
        headers=staff_headers(app, client),
    )
    sign_in(client, merchant.member)
    phone_row, formula_row = (
        dict(zip(CSV_HEADER, row, strict=True)) for row in _csv(client.get(CSV_URL))[1:]
    )
    assert formula_row["description"] == '\'=HYPERLINK("http://evil.example")'
    assert phone_row["destination"] == "'+5511987654321 (PHONE)"
    assert (phone_row["status"], phone_row["failure_reason"]) == ("REJECTED", "'@SUM(A1)")


def test_a_member_may_export(app, client, merchant):
    mine = request(client, merchant).json["id"]
    member = factories.make_member(app, merchant.member.account_id, Role.MEMBER)
    sign_in(client, member)
    assert "Download these payouts as CSV" in _text(client.get(PAGE))
    response = client.get(CSV_URL)
    assert response.status_code == 200
    assert [row[0] for row in _csv(response)[1:]] == [mine]


def test_the_form_states_the_fee_and_says_what_a_typed_amount_costs(app, client, merchant):
    """Before the request is sent: the rule under the form, then for the amount typed the
    fee, what leaves the wallet and what reaches the key (fee-free charges aside, the
    default schedule's Pix payout fee is R$ 1,00 fixed)."""
    sign_in(client, merchant.member)
    page = _text(client.get(PAGE))
    assert "Fee: R$1.00 per payout, on top of the amount." in page
    assert 'data-fee-url="/dashboard/payouts/fee?mode=test"' in page

    answer = client.get(f"{PAGE}/fee?mode=test&amount=1.234,56").get_json()
    assert answer == {
        "complete": True,
        "text": "Fee R$1.00: R$1,235.56 leaves your wallet, R$1,234.56 reaches the key.",
    }
    ambiguous = client.get(f"{PAGE}/fee?mode=test&amount=1.500").get_json()
    assert ambiguous["complete"] is False and "1.500" in ambiguous["text"]
    pt = client.get(f"{PAGE}/fee?amount=10", headers={"Accept-Language": "pt-BR"}).get_json()
    assert pt["text"] == (
        "Tarifa de R$\u00a01,00: R$\u00a011,00 saem da sua carteira e R$\u00a010,00 chegam à chave."
    )
