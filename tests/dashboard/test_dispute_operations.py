"""The back-office's dispute desk through real HTTP: staff see the open and appealed cases of
every account (mismatched amounts flagged, appeals, evidence with view links), ask for
evidence, decide (the held money moves as the service says), and record a dispute on a paid
charge once per notification id; merchants get 403 on all of it."""

import html
import re
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import Account, AuditLog, Role
from tests.support import charges, factories
from tests.support import disputes as d
from tests.support.dashboard import sign_in
from tests.support.http import csrf_token
from tests.support.refunds import Merchant, merchant

DESK = "/dashboard/back-office/disputes"
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 2 + b"\n%%EOF"


@pytest.fixture
def shop(app, monkeypatch, tmp_path):
    """A fee-free test merchant whose evidence goes to this test's own storage directory."""
    (tmp_path / "evidence").mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(tmp_path / "evidence"))
    return merchant(app, monkeypatch)


@pytest.fixture
def staff(app, client):
    member = factories.make_staff(app)
    sign_in(client, member)
    return member


def _opened(app, client, shop: Merchant, **report) -> dict:
    return d.opened(client, shop, d.paid_charge(app, client, shop)["id"], **report)


def _text(response) -> str:
    return " ".join(html.unescape(response.get_data(as_text=True)).split())


def _post(client, action: str, **fields):
    token = csrf_token(client.get(DESK).get_data(as_text=True))
    return client.post(action, data={"csrf_token": token, **fields})


def _case(client, shop: Merchant, case_id: str) -> dict:
    return d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case_id}").get_json()


def _cases(client, shop: Merchant) -> list[dict]:
    return d.call(client, shop.api_key, "GET", "/v1/med/cases").get_json()["data"]


def _balance(client, shop: Merchant) -> dict:
    return client.get("/v1/wallets/balance", headers={"apikey": shop.api_key}).get_json()


def _row(page: str, case_id: str) -> str:
    start = page.index(case_id)
    return page[page.rindex("<tr>", 0, start) : page.index("</tr>", start)]


def _evidence(client, shop: Merchant, case_id: str, name: str) -> None:
    ticket = d.ticket(client, shop.api_key, case_id, PDF, file_name=name).get_json()
    assert d.put_file(client, ticket, PDF).status_code == 200
    assert d.complete(client, shop.api_key, case_id, ticket["id"]).status_code == 200


def _opening(charge_id: str, external_id: str, **fields) -> dict:
    """The opening form as a browser posts it: every field, empty unless given."""
    blank = {"type": "med", "amount": "", "method": "", "reason": "", "response_deadline": ""}
    return {**blank, "charge_id": charge_id, "external_id": external_id, **fields}


# Who gets in


def test_merchants_get_403_on_the_desk_and_every_action(app, client, shop):
    case = _opened(app, client, shop)
    owner = factories.make_member(app, shop.account_id, Role.OWNER)
    sign_in(client, owner)
    assert "Dispute desk" not in _text(client.get("/dashboard/"))
    token = csrf_token(client.get("/dashboard/disputes").get_data(as_text=True))
    assert client.get(DESK).status_code == 403
    for action, fields in (
        (f"{DESK}/{case['id']}/request-evidence", {}),
        (f"{DESK}/{case['id']}/decision", {"decision": "refunded_to_merchant"}),
        (f"{DESK}/{case['id']}/confirm-amount", {"amount": "1,00"}),
        (DESK, _opening(case["charge_id"], "ext-merchant")),
    ):
        response = client.post(action, data={"csrf_token": token, **fields})
        assert response.status_code == 403, action
        assert "platform staff" in _text(response)
    after = _case(client, shop, case["id"])
    assert (after["status"], after["evidence_requested_at"]) == ("open", None)
    assert len(_cases(client, shop)) == 1


def test_the_desk_needs_a_signed_in_user(client):
    assert "/dashboard/login" in client.get(DESK).headers["Location"]


# What staff see


def test_staff_see_open_and_appealed_cases_of_every_account(app, client, shop, monkeypatch, staff):
    other = merchant(app, monkeypatch)
    with app.app_context():
        db.session.get(Account, other.account_id).name = "Outra Loja"
        db.session.commit()
    urgent = _opened(app, client, other, response_deadline=d.past(hours=1).isoformat())
    appealed = _opened(app, client, shop, reason="Golpe", method="scam")
    d.call(client, shop.api_key, "POST", f"/v1/med/cases/{appealed['id']}/appeal",
           json={"reason": "Produto entregue"})  # fmt: skip
    _evidence(client, shop, appealed["id"], "entrega.pdf")
    mismatch = _opened(app, client, shop, amount=999)
    decided = _opened(app, client, shop)
    d.decide(client, shop.api_key, decided["id"], "rejected")

    back_office = _text(client.get("/dashboard/back-office"))
    assert f'<a href="{DESK}">Dispute desk</a>' in back_office
    page = _text(client.get(DESK))
    assert '<a href="/dashboard/back-office/disputes" aria-current="page">Dispute desk</a>' in page
    assert page.index(urgent["id"]) < page.index(appealed["id"])  # most urgent deadline first
    assert decided["id"] not in page

    row = _row(page, urgent["id"])
    assert "Outra Loja" in row and urgent["charge_id"] in row and "overdue" in row
    row = _row(page, appealed["id"])
    assert "Loja Teste" in row and "R$123.45" in row and "Produto entregue" in row
    assert "Scam: Golpe" in row and "amount differs" not in row
    link = re.search(r'<a href="([^"]+)" target="_blank" rel="noopener">entrega.pdf</a>', row)
    assert link, "no view link"
    parts = urlsplit(link.group(1))
    view = app.test_client().get(f"{parts.path}?{parts.query}")
    assert view.status_code == 200 and view.data == PDF
    assert f'action="{DESK}/{appealed["id"]}/request-evidence"' in row
    assert f'<label for="decision-{appealed["id"]}">Decision</label>' in row
    assert '<option value="refunded_to_merchant">' in row
    row = _row(page, mismatch["id"])
    assert "R$9.99" in row and "amount differs" in row
    assert (
        "the charge is R$123.45; nothing held: confirm the amount to hold before it can be lost"
        in row
    )


def test_an_empty_desk_says_so(client, staff):
    assert "No open or appealed dispute cases." in _text(client.get(DESK))


# The channel's actions


def test_staff_request_evidence(app, client, shop, staff):
    case = _opened(app, client, shop)
    response = _post(client, f"{DESK}/{case['id']}/request-evidence")
    assert response.status_code == 303 and response.headers["Location"].endswith(DESK)
    assert f"Evidence requested for case {case['id']}" in _text(client.get(DESK))
    assert _case(client, shop, case["id"])["evidence_requested_at"] is not None
    assert "med_case.updated" in [kind for kind, _ in d.case_events(app, case["id"])]
    with app.app_context():
        entry = db.session.scalar(sa.select(AuditLog).where(AuditLog.subject_id == case["id"]))
        assert entry.action == "med_case.evidence_requested"
        assert entry.actor_user_id == staff.user_id


def test_a_decision_in_the_merchants_favour_returns_the_money(app, client, shop, staff):
    charge = d.paid_charge(app, client, shop)
    before = _balance(client, shop)["available"]
    case = d.opened(client, shop, charge["id"])
    assert _balance(client, shop)["available"] == before - 12345

    response = _post(
        client,
        f"{DESK}/{case['id']}/decision",
        decision="refunded_to_merchant",
        note="Entrega comprovada",
    )
    assert response.status_code == 303
    assert f"Case {case['id']} decided: Closed in the merchant's favour" in _text(client.get(DESK))
    after = _case(client, shop, case["id"])
    assert (after["status"], after["money_outcome"]) == ("closed", "refunded_to_merchant")
    balance = _balance(client, shop)
    assert (balance["available"], balance["retained"]) == (before, 0)
    assert charges.get(client, shop.api_key, charge["id"]).get_json()["status"] == "paid"
    with app.app_context():
        actions = dict(
            db.session.execute(
                sa.select(AuditLog.action, AuditLog.actor_user_id).where(
                    AuditLog.subject_id == case["id"]
                )
            ).all()
        )
    assert actions["med_case.refunded_to_merchant"] == staff.user_id

    again = _post(client, f"{DESK}/{case['id']}/decision", decision="rejected")
    assert again.status_code == 303  # the service's refusal is a message
    assert "The case is already closed." in _text(client.get(DESK))
    assert _balance(client, shop)["available"] == before


def test_a_rejection_sends_the_held_amount_to_the_payer(app, client, shop, staff):
    case = _opened(app, client, shop)
    held = _balance(client, shop)
    _post(client, f"{DESK}/{case['id']}/decision", decision="rejected")
    after = _case(client, shop, case["id"])
    assert (after["status"], after["money_outcome"]) == ("rejected", "lost")
    balance = _balance(client, shop)
    assert (balance["available"], balance["retained"]) == (held["available"], 0)


def test_an_unknown_decision_or_case_changes_nothing(app, client, shop, staff):
    case = _opened(app, client, shop)
    assert _post(client, f"{DESK}/{case['id']}/decision", decision="won").status_code == 400
    missing = _post(client, f"{DESK}/med_nope/decision", decision="rejected")
    assert missing.status_code == 303
    assert "No such dispute case." in _text(client.get(DESK))
    assert _case(client, shop, case["id"])["status"] == "open"


# Recording a dispute on a paid charge


def test_staff_open_a_case_once_per_notification_id(app, client, shop, staff):
    charge = d.paid_charge(app, client, shop)
    before = _balance(client, shop)["available"]
    fields = _opening(
        charge["id"],
        "bank-0042",
        method="unauthorized",
        reason="Não reconheço",
        response_deadline="2030-01-02T10:00",
    )
    response = _post(client, DESK, **fields)
    assert response.status_code == 303
    [case] = _cases(client, shop)
    assert f"Case {case['id']} opened: R$123.45 held from the merchant's wallet." in _text(
        client.get(DESK)
    )
    assert (case["status"], case["charge_id"], case["reason"]) == (
        "open",
        charge["id"],
        "Não reconheço",
    )
    assert case["response_deadline"] == "2030-01-02T13:00:00+00:00"  # typed in São Paulo time
    assert _balance(client, shop)["available"] == before - 12345
    assert d.case_row(app, case["id"]).source == "back_office"

    again = _post(client, DESK, **fields)
    assert again.status_code == 303
    assert f"already recorded as case {case['id']}; nothing changed" in _text(client.get(DESK))
    assert len(_cases(client, shop)) == 1
    assert _balance(client, shop)["available"] == before - 12345


def test_a_different_amount_opens_a_flagged_case_that_holds_nothing(app, client, shop, staff):
    charge = d.paid_charge(app, client, shop)
    before = _balance(client, shop)
    _post(client, DESK, **_opening(charge["id"], "bank-7", amount="50,00"))
    assert "so nothing was held: confirm the amount to hold" in _text(client.get(DESK))
    [case] = _cases(client, shop)
    assert case["amount"] == 5000
    assert _balance(client, shop) == before
    assert "amount differs" in _row(_text(client.get(DESK)), case["id"])


def test_staff_confirm_a_differing_amount_which_is_then_held_and_can_be_lost(
    app, client, shop, staff
):
    charge = d.paid_charge(app, client, shop)
    before = _balance(client, shop)["available"]
    _post(client, DESK, **_opening(charge["id"], "bank-8", amount="50,00"))
    [case] = _cases(client, shop)
    confirm = f"{DESK}/{case['id']}/confirm-amount"
    too_much = _post(client, confirm, amount="999,99")
    assert too_much.status_code == 303
    assert "the charge less its completed refunds" in _text(client.get(DESK))
    assert _balance(client, shop)["available"] == before
    assert _post(client, confirm, amount="50,00").status_code == 303
    assert "R$50.00 held from the merchant" in _text(client.get(DESK))
    assert _balance(client, shop)["available"] == before - 5000
    assert charges.get(client, shop.api_key, charge["id"]).get_json()["status"] == "disputed"
    assert "amount differs" not in _row(_text(client.get(DESK)), case["id"])
    _post(client, f"{DESK}/{case['id']}/decision", decision="rejected")
    assert _case(client, shop, case["id"])["money_outcome"] == "lost"
    assert _balance(client, shop)["available"] == before - 5000
    again = _post(client, confirm, amount="50,00")
    assert again.status_code == 303
    assert _balance(client, shop)["available"] == before - 5000


@pytest.mark.parametrize(
    ("fields", "status", "problem"),
    [
        ({"external_id": ""}, 400, "Enter the id the dispute channel gave this notification."),
        ({"external_id": "no spaces"}, 400, "Use 1 to 64 letters, digits, '_' or '-'."),
        ({"amount": "abc"}, 400, "Enter an amount in the payment's currency"),
        ({"type": "pix"}, 400, "Not a valid choice"),
        ({"charge_id": "ch_nope"}, 404, "No such charge."),
    ],
)
def test_a_refused_opening_shows_why_and_opens_nothing(
    app, client, shop, staff, fields, status, problem
):
    charge = d.paid_charge(app, client, shop)
    response = _post(client, DESK, **{**_opening(charge["id"], "bank-1"), **fields})
    assert response.status_code == status
    text = _text(response)
    assert "The case was not opened." in text and problem in text
    assert _cases(client, shop) == []


def test_an_unpaid_charge_cannot_be_disputed(app, client, shop, staff):
    unpaid = charges.created(client, shop.api_key)
    response = _post(client, DESK, **_opening(unpaid["id"], "bank-2"))
    assert response.status_code == 409
    assert "Only a paid charge can be disputed" in _text(response)
    assert _cases(client, shop) == []
