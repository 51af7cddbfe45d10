"""The back-office: platform staff see every merchant account and decide held Pix payments;
nobody else gets in."""

import html

import sqlalchemy as sa

from app.extensions import db
from app.models import AuditLog, Role
from app.services import accounts, ledger
from tests.support import charges, factories
from tests.support.dashboard import post_form, sign_in
from tests.support.payouts import available as payout_balance
from tests.support.payouts import funded_merchant, run_jobs
from tests.support.payouts import request as request_payout

BACK_OFFICE = "/dashboard/back-office"


def _staff(app):
    from app.extensions import db

    with app.app_context():
        user = accounts.add_user("ops@acmepay.example.com", factories.PASSWORD, is_staff=True)
        db.session.commit()
        return factories.Member(user.id, "", user.email, Role.MEMBER)


def test_staff_without_an_account_lands_on_the_back_office(app, client, owner):
    factories.make_api_key(app, owner.account_id)
    response = sign_in(client, _staff(app))
    assert response.headers["Location"].endswith("/dashboard/back-office")
    page = client.get("/dashboard/back-office").get_data(as_text=True)
    assert "Loja Teste" in page and owner.account_id in page
    assert ">1</td>" in page  # one active member, one active key
    assert 'href="/dashboard/api-keys"' not in page  # merchant pages need an account


def test_merchant_users_cannot_open_the_back_office(client, owner):
    sign_in(client, owner)
    assert "Back-office" not in client.get("/dashboard/").get_data(as_text=True)
    response = client.get("/dashboard/back-office")
    assert response.status_code == 403
    assert "platform staff" in response.get_data(as_text=True)


def test_back_office_needs_a_signed_in_user(client):
    assert "/dashboard/login" in client.get("/dashboard/back-office").headers["Location"]


def _status(client, key: str, charge_id: str) -> str:
    return client.get(f"/v1/charges/{charge_id}", headers={"apikey": key}).json["status"]


def _ledger_problems(app) -> list[str]:
    with app.app_context():
        return ledger.check()


def test_staff_see_held_payments_and_release_one(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge_id = charges.held_for_review(client, key, name="Ana Souza")
    staff = _staff(app)
    sign_in(client, staff)
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "Payments held for review" in page
    assert charge_id in page and "Loja Teste" in page and "R$123.45" in page
    assert "Ana Souza" in page and "529.982.247-25" in page
    assert "document not reported" in page
    assert f'action="{BACK_OFFICE}/charges/{charge_id}/release"' in page
    assert 'data-confirm="Release R$123.45 to Loja Teste?' in page

    response = post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/charges/{charge_id}/release")
    assert response.status_code == 303
    assert response.headers["Location"].endswith(BACK_OFFICE)
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "released: the merchant was credited" in page
    assert "No payments are waiting for review." in page
    assert _status(client, key, charge_id) == "paid"
    assert _ledger_problems(app) == []
    with app.app_context():
        entry = db.session.scalar(sa.select(AuditLog).where(AuditLog.subject_id == charge_id[3:]))
        assert entry.action == "charge.review_released" and entry.actor_user_id == staff.user_id


def test_staff_return_a_held_payment_to_the_payer(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    kept = charges.held_for_review(client, key)
    returned = charges.held_for_review(client, key)
    sign_in(client, _staff(app))
    response = post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/charges/{returned}/return")
    assert response.status_code == 303
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "returned to the payer" in page
    assert kept in page and f"/charges/{returned}/" not in page
    assert _status(client, key, returned) == "refunded"
    assert _status(client, key, kept) == "processing"
    assert _ledger_problems(app) == []


def test_a_charge_not_in_review_cannot_be_released_or_returned(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge_id = charges.held_for_review(client, key)
    sign_in(client, _staff(app))
    assert (
        post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/charges/{charge_id}/release").status_code
        == 303
    )
    for action in ("release", "return"):
        response = post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/charges/{charge_id}/{action}")
        assert response.status_code == 409
        assert "holds no payment for review" in response.get_data(as_text=True)
    assert _status(client, key, charge_id) == "paid"
    assert (
        post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/charges/ch_nope/release").status_code == 404
    )


def test_merchants_cannot_release_or_return(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge_id = charges.held_for_review(client, key)
    sign_in(client, owner)
    for action in ("release", "return"):
        response = post_form(client, "/dashboard/", f"{BACK_OFFICE}/charges/{charge_id}/{action}")
        assert response.status_code == 403
    assert _status(client, key, charge_id) == "processing"


def test_release_needs_a_csrf_token(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge_id = charges.held_for_review(client, key)
    sign_in(client, _staff(app))
    assert client.post(f"{BACK_OFFICE}/charges/{charge_id}/release").status_code == 400
    assert _status(client, key, charge_id) == "processing"


def _pending_payout(app, client, monkeypatch, amount: int = 10_000):
    """A funded merchant's Pix payout request, waiting for approval."""
    merchant = funded_merchant(app, client, monkeypatch)
    response = request_payout(client, merchant, amount=amount)
    assert response.status_code == 201, response.json
    return merchant, response.json["id"]


def _payout_status(client, merchant, payout_id: str) -> dict:
    return client.get(f"/v1/withdrawals/{payout_id}", headers=merchant.headers).json


def test_staff_see_payouts_waiting_for_approval(app, client, monkeypatch):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    sign_in(client, _staff(app))
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "Payouts waiting for approval" in page
    assert "Loja Teste" in page and "ana@example.com (EMAIL)" in page
    assert "R$100.00" in page and "R$1.00" in page
    assert f'action="{BACK_OFFICE}/payouts/{payout_id}/approve"' in page
    assert f'action="{BACK_OFFICE}/payouts/{payout_id}/reject"' in page
    assert f'<label for="reason-{payout_id}">Reason (optional)</label>' in page
    assert 'data-confirm="Approve R$100.00 to ana@example.com (EMAIL) for Loja Teste?' in page
    assert _payout_status(client, merchant, payout_id)["status"] == "PENDING"


def test_approving_debits_the_wallet_and_the_job_pays_out(app, client, monkeypatch, redis):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    staff = _staff(app)
    sign_in(client, staff)
    response = post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/payouts/{payout_id}/approve")
    assert response.status_code == 303
    assert response.headers["Location"].endswith(BACK_OFFICE)
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "The R$100.00 payout to ana@example.com (EMAIL) approved" in page
    assert "No payouts are waiting for approval." in page
    assert payout_balance(client, merchant) == 100_000 - 10_000 - 100
    assert _payout_status(client, merchant, payout_id)["status"] == "APPROVED"

    run_jobs(app, redis)
    assert _payout_status(client, merchant, payout_id)["status"] == "COMPLETED"
    assert payout_balance(client, merchant) == 100_000 - 10_000 - 100
    assert _ledger_problems(app) == []
    with app.app_context():
        entry = db.session.scalar(
            sa.select(AuditLog).where(
                AuditLog.subject_id == payout_id, AuditLog.action == "payout.approved"
            )
        )
        assert entry.actor_user_id == staff.user_id


def test_rejecting_keeps_the_balance_and_the_reason(app, client, monkeypatch):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    sign_in(client, _staff(app))
    response = post_form(
        client,
        BACK_OFFICE,
        f"{BACK_OFFICE}/payouts/{payout_id}/reject",
        {"reason": "Conta suspeita"},
    )
    assert response.status_code == 303
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "payout to ana@example.com (EMAIL) rejected: nothing was debited" in page
    body = _payout_status(client, merchant, payout_id)
    assert (body["status"], body["failureReason"]) == ("REJECTED", "Conta suspeita")
    assert payout_balance(client, merchant) == 100_000

    too_long = post_form(
        client, BACK_OFFICE, f"{BACK_OFFICE}/payouts/{payout_id}/reject", {"reason": "x" * 501}
    )
    assert too_long.status_code == 303
    assert "Reason (optional):" in html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))


def test_a_second_decision_is_shown_as_an_error(app, client, monkeypatch, redis):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    sign_in(client, _staff(app))
    approve, reject = (
        f"{BACK_OFFICE}/payouts/{payout_id}/{verb}" for verb in ("approve", "reject")
    )
    assert post_form(client, BACK_OFFICE, approve).status_code == 303
    refusals = {
        approve: "Only a PENDING withdrawal can be approved; this one is Approved.",
        reject: "Only a PENDING withdrawal can be rejected; this one is Approved.",
    }
    for action, message in refusals.items():
        response = post_form(client, BACK_OFFICE, action)
        assert response.status_code == 303
        page = html.unescape(client.get(response.headers["Location"]).get_data(as_text=True))
        assert f'<div class="flash flash-error" role="alert">{message}</div>' in page
    assert payout_balance(client, merchant) == 100_000 - 10_000 - 100  # debited once
    assert _ledger_problems(app) == []


def test_approval_refused_when_the_balance_no_longer_covers_it(app, client, monkeypatch, redis):
    merchant, first = _pending_payout(app, client, monkeypatch, amount=60_000)
    second = request_payout(client, merchant, amount=60_000).json["id"]
    sign_in(client, _staff(app))
    assert (
        post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/payouts/{first}/approve").status_code == 303
    )
    response = post_form(client, BACK_OFFICE, f"{BACK_OFFICE}/payouts/{second}/approve")
    assert response.status_code == 303
    page = html.unescape(client.get(BACK_OFFICE).get_data(as_text=True))
    assert "does not cover the amount plus fee" in page
    assert f"/payouts/{second}/approve" in page  # still waiting
    assert _payout_status(client, merchant, second)["status"] == "PENDING"
    assert payout_balance(client, merchant) == 100_000 - 60_000 - 100


def test_merchants_cannot_approve_or_reject_payouts(app, client, monkeypatch):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    sign_in(client, merchant.member)
    for action in ("approve", "reject"):
        response = post_form(
            client, "/dashboard/payouts", f"{BACK_OFFICE}/payouts/{payout_id}/{action}"
        )
        assert response.status_code == 403
    assert _payout_status(client, merchant, payout_id)["status"] == "PENDING"
    assert payout_balance(client, merchant) == 100_000


def test_approval_needs_a_csrf_token(app, client, monkeypatch):
    merchant, payout_id = _pending_payout(app, client, monkeypatch)
    sign_in(client, _staff(app))
    assert client.post(f"{BACK_OFFICE}/payouts/{payout_id}/approve").status_code == 400
    assert _payout_status(client, merchant, payout_id)["status"] == "PENDING"
