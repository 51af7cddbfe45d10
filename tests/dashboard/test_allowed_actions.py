"""The dashboard never offers an action that the API would refuse: each page shows a button
exactly when the service's allowance (what the object allows, and to whom) says the action
would succeed, and the API refuses the others with the allowance's own error. Checked through
real HTTP for objects in every status, as an OWNER and as a MEMBER (who may act on nothing
here)."""

import html
import re

from app.extensions import db
from app.formats.payments import transaction_id
from app.models import KeyMode, Refund, Role
from app.services import accounts
from app.services.disputes import allowances
from app.services.disputes.listing import get_case
from app.services.payouts import listing as payout_listing
from app.services.payouts import requesting as payout_requests
from app.services.transactions import charges, payments, refunds
from app.services.webhooks import endpoints as webhook_endpoints
from tests.support import charges as charge_calls
from tests.support import disputes as d
from tests.support.dashboard import sign_in
from tests.support.http import assert_error, bearer, csrf_token, login
from tests.support.payments import paid, refund
from tests.support.payouts import pix_payout, run_jobs, staff_headers
from tests.support.refunds import poll

TEST = KeyMode.TEST
PAYMENTS = "/dashboard/payments"
DISPUTES = "/dashboard/disputes"
PAYOUTS = "/dashboard/payouts"
WEBHOOKS = "/dashboard/webhooks"
# The page's forms that act: posted forms and the evidence upload's ticket address.
ACTING_FORM = re.compile(r'<form method="post" action="([^"?]+)|data-ticket-url="([^"?]+)')
SESSION_FORMS = {"/dashboard/logout", "/dashboard/accounts", "/dashboard/language"}
WAITING_FOR_SETTLEMENT = "Waiting for funds: the payment's settlement has not been released yet."


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    return html.unescape(response.get_data(as_text=True))


def _acting_forms(client, path: str) -> set[str]:
    """Where the page's action forms post, the session's own forms left out."""
    found = ACTING_FORM.findall(_text(client.get(path)))
    return {posted or ticket for posted, ticket in found} - SESSION_FORMS


def _owner_headers(shop) -> dict:
    return bearer(login(shop.api, shop.member(Role.OWNER)))


# Payments: cancel, refund, cancel a refund waiting for funds, and the Pix instructions


def _fully_refunded_charge(app, redis, shop) -> str:
    charge = d.paid_charge(app, shop.api, shop.merchant)
    answer = refund(shop.api, shop.merchant.api_key, charge["id"], strategy="devolution")
    assert answer.status_code == 201, answer.get_json()
    run_jobs(app, redis)
    poll(app)
    shown = charge_calls.get(shop.api, shop.merchant.api_key, charge["id"]).get_json()
    assert shown["status"] == "refunded"
    return charge["id"]


def _payments_in_every_status(app, redis, shop) -> dict[str, str]:
    """A payment per status the page treats differently, by what it shows; the waiting
    refund is made last, since the polling job would fund it."""
    api, key = shop.api, shop.merchant.api_key
    made = {"refunded": _fully_refunded_charge(app, redis, shop)}
    made["paid"] = d.paid_charge(app, api, shop.merchant)["id"]
    made["paid boleto"] = paid(app, redis, api, key, method="BOLETO")["id"]
    made["waiting"] = shop.waiting_charge
    made["cancelled"] = charge_calls.created(api, key)["id"]
    cancelled = api.post(f"/v1/payments/{made['cancelled']}/cancel", headers={"apikey": key})
    assert cancelled.status_code == 200, cancelled.get_json()
    made["expired"] = charge_calls.created(api, key)["id"]
    charge_calls.update_row(app, made["expired"], expires_at=d.past(minutes=1))
    with app.app_context():
        made["disputed"] = get_case(shop.account_id, TEST, shop.open_case).transaction_id
    made["refund waiting for funds"] = shop.waiting_refund.payment_id
    return made


def _page(app, shop, payment_id: str) -> str:
    """The payment's page, at the id its actions are addressed by (`ch_…` for a charge)."""
    with app.app_context():
        payment = payments.get_payment(shop.account_id, TEST, payment_id)
        return f"{PAYMENTS}/{transaction_id(payment)}"


def _allowed_payment_actions(app, shop, payment_id: str) -> set[str]:
    """The payment page's forms the services allow, for an OWNER."""
    page = _page(app, shop, payment_id)
    with app.app_context():
        payment, rows = refunds.list_refunds(shop.account_id, TEST, payment_id)
        allowed = {
            f"{page}/cancel": payments.cancellability(payment).allowed,
            f"{page}/refund": refunds.refundability(payment).allowed,
            **{
                f"{page}/refunds/{row.id}/cancel": refunds.cancellability(row).allowed
                for row in rows
            },
        }
        db.session.rollback()
    return {path for path, ok in allowed.items() if ok}


def _payable(app, shop, payment_id: str) -> bool:
    with app.app_context():
        payment = payments.get_payment(shop.account_id, TEST, payment_id)
        allowed = charges.payability(payment).allowed
        db.session.commit()
    return allowed


def test_each_payment_shows_exactly_the_actions_its_allowances_allow(app, redis, client, shop):
    made = _payments_in_every_status(app, redis, shop)
    sign_in(client, shop.member(Role.OWNER))
    offered = set()
    for status, payment_id in made.items():
        expected = _allowed_payment_actions(app, shop, payment_id)
        assert _acting_forms(client, f"{_page(app, shop, payment_id)}?mode=test") == expected
        offered |= {(status, path.split("/", 4)[-1]) for path in expected}
    refund_id = shop.waiting_refund.id
    assert offered == {  # each action is offered somewhere
        ("waiting", "cancel"),
        ("paid", "refund"),
        ("refund waiting for funds", f"refunds/{refund_id}/cancel"),
    }


def test_the_pix_code_shows_exactly_while_the_charge_can_be_paid(app, redis, client, shop):
    made = _payments_in_every_status(app, redis, shop)
    sign_in(client, shop.member(Role.OWNER))
    for status, payment_id in made.items():
        payable = _payable(app, shop, payment_id)
        assert payable is (status == "waiting"), status
        dashboard = _text(client.get(f"{_page(app, shop, payment_id)}?mode=test"))
        checkout = _text(client.get(f"/checkout/{charge_calls.raw(payment_id)}"))
        for page in (dashboard, checkout):
            assert ('class="qr"' in page) is payable, status
        assert ('id="br-code"' in dashboard) is payable, status
        assert ('id="pix-code"' in checkout) is payable, status
        if not payable:
            assert "valid until" not in dashboard, status
            assert "The customer can no longer pay this" in dashboard, status


def test_a_paid_boleto_offers_no_refund_and_the_api_refuses_one(app, redis, client, shop):
    boleto = paid(app, redis, shop.api, shop.merchant.api_key, method="BOLETO")
    sign_in(client, shop.member(Role.OWNER))
    text = _text(client.get(f"{PAYMENTS}/{boleto['id']}?mode=test"))
    assert "Request refund" not in text and "Refundable:" not in text
    assert "No refund: The provider of BOLETO payments does not support refunds." in text
    answer = refund(shop.api, shop.merchant.api_key, boleto["id"])
    assert_error(answer, 422, "invalid_request_error", "REFUND_NOT_SUPPORTED")


def test_a_fully_refunded_payment_offers_no_refund_form(app, redis, client, shop):
    charge = d.paid_charge(app, shop.api, shop.merchant)
    page = f"{PAYMENTS}/{charge['id']}?mode=test"
    sign_in(client, shop.member(Role.OWNER))
    assert "Request refund" in _text(client.get(page))
    refund(shop.api, shop.merchant.api_key, charge["id"], strategy="devolution")
    for reason, status, error_type, code in (
        (
            "Refunds already cover the whole transaction.",
            400,
            "invalid_request_error",
            refunds.EXCEEDS_REFUNDABLE,
        ),
        ("this one is Refunded.", 409, "conflict_error", "transaction_not_refundable"),
    ):
        text = _text(client.get(page))
        assert "Request refund" not in text and "Refundable:" not in text
        assert re.search(rf"No refund: [^<]*{re.escape(reason)}", text), reason
        answer = refund(shop.api, shop.merchant.api_key, charge["id"], amount=1)
        assert_error(answer, status, error_type, code)
        run_jobs(app, redis)
        poll(app)  # the refund completes: the payment is REFUNDED


def test_a_refund_waiting_for_funds_says_why_and_its_owner_cancels_it(app, client, shop):
    waiting = shop.waiting_refund
    page = f"{_page(app, shop, waiting.payment_id)}?mode=test"
    cancel = f"{_page(app, shop, waiting.payment_id)}/refunds/{waiting.id}/cancel"
    sign_in(client, shop.member(Role.OWNER))
    text = _text(client.get(page))
    assert WAITING_FOR_SETTLEMENT in text
    assert cancel in _acting_forms(client, page)

    key = re.search(
        rf'action="{cancel}[^"]*"[^>]*>[^<]*<input[^>]*>[^<]*<input[^>]*value="(\w+)"', text
    )
    assert key, "no idempotency key in the cancel form"
    form = {"csrf_token": csrf_token(text), "idempotency_key": key.group(1)}
    first = client.post(f"{cancel}?mode=test", data=form)
    assert client.post(f"{cancel}?mode=test", data=form).status_code == 303  # a double click
    assert (first.status_code, first.headers["Location"]) == (303, page)
    text = _text(client.get(page))
    assert "Refund cancelled: nothing was debited, and it will not be sent." in text
    assert WAITING_FOR_SETTLEMENT not in text and cancel not in _acting_forms(client, page)

    listed = shop.api.get(
        f"/v1/payments/{waiting.payment_id}/refunds", headers={"apikey": shop.merchant.api_key}
    ).get_json()["data"]
    assert [(row["id"], row["status"]) for row in listed] == [(waiting.id, "FAILED")]
    again = shop.api.post(
        f"/v1/payments/{waiting.payment_id}/refunds/{waiting.id}/cancel",
        headers={"apikey": shop.merchant.api_key},
    )
    assert_error(again, 409, "conflict_error", refunds.NOT_CANCELLABLE)


# Disputes: appeal, accept, attach evidence


def _cases_in_every_status(app, shop) -> dict[str, str]:
    api, key = shop.api, shop.merchant.api_key
    made = {"open": shop.open_case, "under review": shop.case_under_review}
    for status, answer in (("appealed", "appeal"), ("accepted", "accept")):
        case_id = shop._case()
        body = {"reason": "Produto entregue ao cliente."} if answer == "appeal" else None
        answered = d.call(api, key, "POST", f"/v1/med/cases/{case_id}/{answer}", json=body)
        assert answered.status_code == 200, answered.get_json()
        made[status] = case_id
    made["closed"] = shop._case()
    assert d.decide(api, key, made["closed"], "refunded_to_merchant").status_code == 200
    return made


def _allowed_case_actions(app, shop, case_id: str) -> set[str]:
    with app.app_context():
        case = get_case(shop.account_id, TEST, case_id)
        page = f"{DISPUTES}/{case_id}"
        allowed = {
            f"{page}/appeal": allowances.appealability(case).allowed,
            f"{page}/accept": allowances.acceptability(case).allowed,
            f"{page}/evidence": allowances.attachability(case).allowed,
        }
        db.session.rollback()
    return {path for path, ok in allowed.items() if ok}


def test_each_case_shows_exactly_the_answers_its_allowances_allow(app, client, shop):
    made = _cases_in_every_status(app, shop)
    sign_in(client, shop.member(Role.OWNER))
    offered = set()
    for status, case_id in made.items():
        expected = _allowed_case_actions(app, shop, case_id)
        assert _acting_forms(client, f"{DISPUTES}/{case_id}?mode=test") == expected, status
        offered |= {path.rsplit("/", 1)[-1] for path in expected}
    assert offered == {"appeal", "accept", "evidence"}


def test_an_appealed_case_offers_no_answer_and_the_api_refuses_both(app, client, shop):
    case_id = shop.open_case
    api, key = shop.api, shop.merchant.api_key
    reason = {"reason": "Produto entregue ao cliente."}
    appealed = d.call(api, key, "POST", f"/v1/med/cases/{case_id}/appeal", json=reason)
    assert appealed.status_code == 200, appealed.get_json()
    sign_in(client, shop.member(Role.OWNER))
    page = f"{DISPUTES}/{case_id}?mode=test"
    text = _text(client.get(page))
    assert "Send appeal" not in text and "Accept the dispute" not in text
    assert "You appealed: the amount stays held until the dispute is decided." in text
    assert _acting_forms(client, page) == {f"{DISPUTES}/{case_id}/evidence"}
    for answer, body in (("appeal", reason), ("accept", None)):
        refused = d.call(api, key, "POST", f"/v1/med/cases/{case_id}/{answer}", json=body)
        assert_error(refused, 400, "invalid_request_error", allowances.NOT_OPEN)


# Payouts: cancel


def _payouts_in_every_status(app, shop) -> dict[str, str]:
    headers = _owner_headers(shop)
    made = {"pending": shop.pending_payout}
    for status in ("cancelled", "approved", "rejected"):
        response = shop.api.post("/v1/withdrawals", json=pix_payout(), headers=headers)
        assert response.status_code == 201, response.get_json()
        made[status] = response.get_json()["id"]
    staff = staff_headers(app, shop.api)
    moves = (
        (f"/v1/withdrawals/{made['cancelled']}/cancel", headers),
        (f"/v1/admin/withdrawals/{made['approved']}/approve", staff),
        (f"/v1/admin/withdrawals/{made['rejected']}/reject", staff),
    )
    for path, by in moves:
        moved = shop.api.post(path, json={}, headers=by)
        assert moved.status_code == 200, (path, moved.get_json())
    return made


def _owner_membership(shop):
    return accounts.active_membership(shop.member(Role.OWNER).user_id, shop.account_id)


def test_each_payout_shows_a_cancel_button_exactly_when_it_may_be_cancelled(app, client, shop):
    made = _payouts_in_every_status(app, shop)
    with app.app_context():
        membership = _owner_membership(shop)
        expected = {
            f"{PAYOUTS}/{payout_id}/cancel"
            for payout_id in made.values()
            if payout_requests.cancellability(
                payout_listing.get(shop.account_id, payout_id), membership
            ).allowed
        }
        db.session.rollback()
    assert expected == {f"{PAYOUTS}/{made['pending']}/cancel"}
    sign_in(client, shop.member(Role.OWNER))
    assert _acting_forms(client, f"{PAYOUTS}?mode=test") == expected | {PAYOUTS}  # + request
    refused = shop.api.post(
        f"/v1/withdrawals/{made['approved']}/cancel", headers=_owner_headers(shop)
    )
    assert_error(refused, 409, "conflict_error", "withdrawal_not_cancellable")


# Webhooks: recover (endpoints page) and resend (delivery page)


def test_recover_and_resend_show_exactly_while_the_endpoint_allows_them(app, client, shop):
    delivery = shop.failed_delivery
    with app.app_context():
        inactive, _ = webhook_endpoints.create_endpoint(
            shop.account_id, TEST, "http://localhost:9000/off", ["charge.paid"]
        )
        webhook_endpoints.update_endpoint(
            shop.account_id, TEST, inactive.id, {"status": "INACTIVE"}
        )
        inactive_id = inactive.id
        db.session.commit()
    sign_in(client, shop.member(Role.OWNER))
    delivery_page = f"{WEBHOOKS}/deliveries/{delivery.id}?mode=test"
    resend = f"{WEBHOOKS}/deliveries/{delivery.id}/resend"

    def expected_recoveries() -> set[str]:
        with app.app_context():
            endpoints = webhook_endpoints.list_endpoints(shop.account_id, TEST)
            allowed = {
                f"{WEBHOOKS}/{e.id}/recover"
                for e in endpoints
                if webhook_endpoints.resendability(e).allowed
            }
            db.session.rollback()
        return allowed

    def recoveries() -> set[str]:
        forms = _acting_forms(client, f"{WEBHOOKS}?mode=test")
        return {path for path in forms if path.endswith("/recover")}

    assert recoveries() == expected_recoveries() == {f"{WEBHOOKS}/{delivery.endpoint_id}/recover"}
    assert f"{WEBHOOKS}/{inactive_id}/status" in _acting_forms(client, f"{WEBHOOKS}?mode=test")
    assert resend in _acting_forms(client, delivery_page)

    switched = {"status": "INACTIVE", "csrf_token": csrf_token(_text(client.get(WEBHOOKS)))}
    client.post(f"{WEBHOOKS}/{delivery.endpoint_id}/status?mode=test", data=switched)
    assert recoveries() == expected_recoveries() == set()
    assert resend not in _acting_forms(client, delivery_page)
    refused = shop.api.post(
        f"/v1/webhooks/deliveries/{delivery.id}/retry", headers={"apikey": shop.merchant.api_key}
    )
    assert_error(refused, 409, "conflict_error", "endpoint_inactive")

    with app.app_context():
        webhook_endpoints.delete_endpoint(shop.account_id, TEST, delivery.endpoint_id)
        db.session.commit()
    assert _acting_forms(client, delivery_page) == set()


# A MEMBER may read every page but act on nothing there


def test_a_member_sees_no_action_on_any_page(app, client, shop):
    pages = [
        f"{PAYMENTS}/{shop.waiting_charge}?mode=test",
        f"{DISPUTES}/{shop.open_case}?mode=test",
        f"{PAYOUTS}?mode=test",
        f"{WEBHOOKS}?mode=test",
        f"{WEBHOOKS}/deliveries/{shop.failed_delivery.id}?mode=test",
        f"{PAYMENTS}/{shop.paid_charge}?mode=test",
        f"{_page(app, shop, shop.waiting_refund.payment_id)}?mode=test",
    ]
    with app.app_context():
        assert db.session.get(Refund, shop.waiting_refund.id).pending_reason is not None
    sign_in(client, shop.member(Role.MEMBER))  # the only role below OWNER and ADMIN
    for page in pages:
        assert _acting_forms(client, page) == set(), page
    text = _text(client.get(pages[-1]))
    assert WAITING_FOR_SETTLEMENT in text and "Cancel refund" not in text
    assert "Only an OWNER or ADMIN of the account can cancel or refund payments." in text
