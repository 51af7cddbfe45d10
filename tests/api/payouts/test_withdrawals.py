"""Payouts (withdrawals): request, approval, processing, failure, rejection, cancellation."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa
from redis.exceptions import ConnectionError as RedisConnectionError

from app.cli import check_ledger
from app.extensions import db
from app.jobs import payouts as payout_jobs
from app.models import Event, LedgerPosting, Payout, Role
from app.models.base import utcnow
from app.providers.base import ProviderError
from app.providers.sandbox import FAILING_AMOUNT, SandboxProvider
from app.services import ledger
from app.services.payouts import processing as payout_processing
from tests.support import factories
from tests.support.dashboard import post_form, sign_in
from tests.support.http import assert_error, bearer, count_rows, login
from tests.support.payouts import (
    available,
    funded_merchant,
    pix_payout,
    request,
    run_jobs,
    set_account,
    staff_headers,
)

PIX_FEE = 100  # default schedule: R$ 1,00 per Pix payout


@pytest.fixture
def merchant(app, client, monkeypatch):
    return funded_merchant(app, client, monkeypatch)


@pytest.fixture
def staff(app, client):
    return staff_headers(app, client)


def _events(app, payout_id) -> dict[str, dict]:
    with app.app_context():
        rows = db.session.scalars(sa.select(Event).where(Event.subject_id == payout_id))
        return {event.type: event.data for event in rows}


def _approve(client, staff, payout_id):
    return client.post(f"/v1/admin/withdrawals/{payout_id}/approve", headers=staff)


def _ledger_is_clean(app):
    with app.app_context():
        assert ledger.check() == []


def test_a_request_is_pending_with_its_fee_and_debits_nothing(app, client, merchant):
    response = request(client, merchant)
    assert response.status_code == 201
    body = response.get_json()
    assert body["status"] == "PENDING"
    assert (body["amount"], body["fee"], body["netAmount"]) == (10_000, PIX_FEE, 9_900)
    assert (body["type"], body["currency"], body["mode"]) == ("PIX", "BRL", "test")
    assert (body["pixKey"], body["pixKeyType"]) == ("ana@example.com", "EMAIL")
    assert body["description"] == "Saque semanal"
    assert body["completedAt"] is None
    assert "bankAccount" not in body and "cryptoAddress" not in body
    assert available(client, merchant) == 100_000
    events = _events(app, body["id"])
    assert events["payout.created"] == {"object": body}
    assert events["withdrawal.created"]["status"] == "PENDING"


def test_a_replayed_request_returns_the_first_and_another_body_conflicts(app, client, merchant):
    body = pix_payout()
    first = client.post("/v1/withdrawals", json=body, headers=merchant.headers)
    again = client.post("/v1/withdrawals", json=body, headers=merchant.headers)
    assert again.get_json() == first.get_json()
    changed = client.post(
        "/v1/withdrawals", json={**body, "amount": 5_000}, headers=merchant.headers
    )
    assert_error(changed, 409, "conflict_error", "idempotency_key_reused")
    assert count_rows(app, Payout) == 1


@pytest.mark.parametrize(
    ("overrides", "code", "param"),
    [
        ({"type": "BOLETO"}, "invalid_request", "type"),
        ({"amount": 0}, "invalid_amount", "amount"),
        ({"amount": "100"}, "invalid_amount", "amount"),
        ({"currency": "USD"}, "invalid_request", "currency"),
        ({"pixKey": None}, "invalid_request", "pixKey"),
        ({"pixKeyType": "TWITTER"}, "invalid_request", "pixKeyType"),
        ({"pixKey": "not-an-email", "pixKeyType": "EMAIL"}, "invalid_pix_key", "pixKey"),
        ({"pixKey": "52998224724", "pixKeyType": "CPF"}, "invalid_pix_key", "pixKey"),
        ({"cryptoAddress": "0x" + "a" * 40}, "invalid_request", "cryptoAddress"),
        ({"amount": 100_001}, "insufficient_funds", "amount"),
        ({"idempotencyKey": "short"}, "invalid_request", "idempotencyKey"),
    ],
)
def test_a_refused_request_creates_nothing(app, client, merchant, overrides, code, param):
    body = pix_payout(**overrides)
    body = {k: v for k, v in body.items() if v is not None}
    response = client.post("/v1/withdrawals", json=body, headers=merchant.headers)
    assert_error(response, 400, "invalid_request_error", code, param=param)
    assert count_rows(app, Payout) == 0


TED = {
    "type": "TED",
    "pixKey": None,
    "pixKeyType": None,
    "bankAccount": {
        "bankCode": "341",
        "agency": "0001",
        "account": "12345-6",
        "holderName": "Loja Exemplo Ltda",
        "holderDocument": "11.222.333/0001-81",
    },
}


def test_ted_payouts_validate_the_brazilian_bank_account(app, client, merchant):
    body = {k: v for k, v in pix_payout(**TED).items() if v is not None}
    created = client.post("/v1/withdrawals", json=body, headers=merchant.headers).get_json()
    assert created["status"] == "PENDING"
    assert created["bankAccount"]["holderDocument"] == "11222333000181"
    assert created["fee"] == 500
    for field, value in (
        ("bankCode", "34"),
        ("agency", "abc"),
        ("account", ""),
        ("holderDocument", "11222333000180"),
    ):
        broken = {
            **body,
            "idempotencyKey": f"ted-{field}-key",
            "bankAccount": dict(body["bankAccount"]),
        }
        broken["bankAccount"][field] = value
        response = client.post("/v1/withdrawals", json=broken, headers=merchant.headers)
        assert_error(
            response, 400, "invalid_request_error", "invalid_request", param=f"bankAccount.{field}"
        )


CRYPTO = {
    "type": "CRYPTO",
    "currency": "USDT",
    "pixKey": None,
    "pixKeyType": None,
    "cryptoAddress": "0x" + "ab" * 20,
    "cryptoNetwork": "BSC",
    "cryptoCurrency": "USDT",
}


@pytest.mark.parametrize(
    ("overrides", "param"),
    [
        ({"cryptoNetwork": "ETH"}, "cryptoNetwork"),
        ({"cryptoCurrency": "USDC"}, "cryptoCurrency"),
        ({"cryptoAddress": "0x123"}, "cryptoAddress"),
        ({"cryptoAddress": "1" + "a" * 41}, "cryptoAddress"),
        ({"currency": "BRL"}, "currency"),
    ],
)
def test_crypto_payouts_are_refused_before_any_debit(app, client, merchant, overrides, param):
    body = {k: v for k, v in pix_payout(**{**CRYPTO, **overrides}).items() if v is not None}
    response = client.post("/v1/withdrawals", json=body, headers=merchant.headers)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)
    assert count_rows(app, Payout) == 0


def test_a_valid_crypto_payout_needs_a_usdt_balance(app, client, merchant):
    body = {k: v for k, v in pix_payout(**CRYPTO).items() if v is not None}
    response = client.post("/v1/withdrawals", json=body, headers=merchant.headers)
    assert_error(response, 400, "invalid_request_error", "insufficient_funds", param="amount")


def test_caps_per_payout_and_per_day(app, client, merchant):
    set_account(app, merchant.member.account_id, payout_transaction_cap=20_000)
    over = request(client, merchant, amount=20_001)
    assert_error(over, 400, "invalid_request_error", "payout_amount_limit_exceeded", "amount")
    set_account(app, merchant.member.account_id, payout_daily_cap=30_000)
    assert request(client, merchant, amount=20_000).status_code == 201
    daily = request(client, merchant, amount=10_001)
    assert_error(daily, 400, "invalid_request_error", "payout_daily_limit_exceeded", "amount")
    assert request(client, merchant, amount=10_000).status_code == 201


def test_only_owner_or_admin_may_request(app, client, merchant):
    member = factories.make_member(app, merchant.member.account_id, Role.MEMBER)
    response = client.post(
        "/v1/withdrawals", json=pix_payout(), headers=bearer(login(client, member))
    )
    assert_error(response, 403, "permission_error", "WITHDRAWAL_ROLE_REQUIRED")


def test_live_payouts_need_a_live_provider(app, client, merchant):
    response = request(client, merchant, test=False)
    assert response.status_code in (400, 422)
    assert count_rows(app, Payout) == 0


def test_approval_debits_then_the_job_completes_it(app, client, merchant, staff, redis):
    payout = request(client, merchant).get_json()
    approved = _approve(client, staff, payout["id"])
    assert approved.status_code == 200
    assert approved.get_json()["status"] == "APPROVED"
    assert available(client, merchant) == 100_000 - 10_000 - PIX_FEE
    run_jobs(app, redis)
    done = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert done["status"] == "COMPLETED"
    assert done["completedAt"] is not None
    assert available(client, merchant) == 100_000 - 10_000 - PIX_FEE
    events = _events(app, payout["id"])
    assert events["payout.paid"]["object"]["status"] == "COMPLETED"
    assert events["withdrawal.completed"]["previousStatus"] == "PROCESSING"
    _ledger_is_clean(app)


def test_approval_is_refused_when_the_balance_no_longer_covers(app, client, merchant, staff):
    first = request(client, merchant, amount=60_000).get_json()
    second = request(client, merchant, amount=39_000).get_json()
    third = request(client, merchant, amount=5_000).get_json()
    assert _approve(client, staff, first["id"]).status_code == 200
    assert _approve(client, staff, second["id"]).status_code == 200
    refused = _approve(client, staff, third["id"])
    assert_error(refused, 409, "conflict_error", "insufficient_funds")
    assert (
        client.get(f"/v1/withdrawals/{third['id']}", headers=merchant.headers).get_json()["status"]
        == "PENDING"
    )
    assert available(client, merchant) == 100_000 - 99_000 - 2 * PIX_FEE
    again = _approve(client, staff, first["id"])
    assert_error(again, 409, "conflict_error", "withdrawal_not_pending")


def test_a_rejected_payout_fails_and_frees_nothing(app, client, merchant, staff):
    payout = request(client, merchant).get_json()
    rejected = client.post(
        f"/v1/admin/withdrawals/{payout['id']}/reject",
        json={"reason": "Destination under review"},
        headers=staff,
    ).get_json()
    assert rejected["status"] == "REJECTED"
    assert rejected["failureReason"] == "Destination under review"
    assert available(client, merchant) == 100_000
    failed = _events(app, payout["id"])["withdrawal.failed"]
    assert failed["status"] == "REJECTED"


def test_an_acquirer_rejection_refunds_amount_and_fee_exactly_once(app, client, merchant, staff):
    payout = request(client, merchant, amount=FAILING_AMOUNT).get_json()
    _approve(client, staff, payout["id"])
    assert available(client, merchant) == 100_000 - FAILING_AMOUNT - PIX_FEE
    with app.app_context():
        assert payout_jobs.process_payout(payout["id"]) == "FAILED"
        assert payout_jobs.process_payout(payout["id"]) is None  # a second run does nothing
    body = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "FAILED"
    assert body["failureReason"]
    assert available(client, merchant) == 100_000
    with app.app_context():
        refunds = db.session.scalar(
            sa.select(sa.func.count())
            .select_from(LedgerPosting)
            .where(LedgerPosting.kind == "payout_refund")
        )
    assert refunds == 1
    assert _events(app, payout["id"])["withdrawal.failed"]["status"] == "FAILED"
    _ledger_is_clean(app)


def test_the_merchant_may_cancel_only_while_pending(app, client, merchant, staff):
    payout = request(client, merchant).get_json()
    cancelled = client.post(
        f"/v1/withdrawals/{payout['id']}/cancel", headers=merchant.headers
    ).get_json()
    assert cancelled["status"] == "CANCELLED"
    assert _events(app, payout["id"])["withdrawal.failed"]["status"] == "CANCELLED"
    again = client.post(f"/v1/withdrawals/{payout['id']}/cancel", headers=merchant.headers)
    assert_error(again, 409, "conflict_error", "withdrawal_not_cancellable")
    approved = request(client, merchant).get_json()
    _approve(client, staff, approved["id"])
    late = client.post(f"/v1/withdrawals/{approved['id']}/cancel", headers=merchant.headers)
    assert_error(late, 409, "conflict_error", "withdrawal_not_cancellable")


def test_auto_approval_under_the_threshold(app, client, merchant, redis):
    set_account(
        app,
        merchant.member.account_id,
        withdrawals_auto_approve=True,
        withdrawals_auto_approve_threshold=20_000,
    )
    small = request(client, merchant, amount=20_000).get_json()
    large = request(client, merchant, amount=20_001).get_json()
    assert small["status"] == "APPROVED"
    assert large["status"] == "PENDING"
    assert available(client, merchant) == 100_000 - 20_000 - PIX_FEE
    run_jobs(app, redis)
    body = client.get(f"/v1/withdrawals/{small['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "COMPLETED"


def test_list_pages_filters_and_scopes(app, client, merchant):
    ids = [request(client, merchant, amount=1_000 + i).get_json()["id"] for i in range(3)]
    client.post(f"/v1/withdrawals/{ids[0]}/cancel", headers=merchant.headers)
    page = client.get("/v1/withdrawals?page=1&limit=2", headers=merchant.headers).get_json()
    assert (page["total"], page["page"], page["limit"]) == (3, 1, 2)
    assert [w["id"] for w in page["data"]] == [ids[2], ids[1]]
    assert "completedAt" in page["data"][0]
    second = client.get("/v1/withdrawals?page=2&limit=2", headers=merchant.headers).get_json()
    assert [w["id"] for w in second["data"]] == [ids[0]]
    cancelled = client.get("/v1/withdrawals?status=CANCELLED", headers=merchant.headers)
    assert [w["id"] for w in cancelled.get_json()["data"]] == [ids[0]]
    for query, param in (("?status=DONE", "status"), ("?limit=101", "limit"), ("?page=0", "page")):
        response = client.get(f"/v1/withdrawals{query}", headers=merchant.headers)
        assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)
    other = factories.make_member(app)
    response = client.get(f"/v1/withdrawals/{ids[1]}", headers=bearer(login(client, other)))
    assert_error(response, 404, "not_found_error", "not_found")


def test_admin_routes_need_a_staff_token(app, client, merchant):
    payout = request(client, merchant).get_json()
    response = client.post(
        f"/v1/admin/withdrawals/{payout['id']}/approve", headers=merchant.headers
    )
    assert_error(response, 403, "permission_error", "staff_token_required")
    response = client.post(f"/v1/admin/withdrawals/{payout['id']}/approve")
    assert_error(response, 401, "authentication_error", "unauthorized")
    queue = client.get("/v1/admin/withdrawals", headers=staff_headers(app, client)).get_json()
    assert [w["id"] for w in queue] == [payout["id"]]


@pytest.mark.postgres
def test_fifty_concurrent_approvals_against_a_balance_for_ten(app, client, merchant, staff):
    """On PostgreSQL: a balance that covers 10 payouts pays exactly 10, never below zero."""
    ids = [request(client, merchant, amount=10_000 - PIX_FEE).get_json()["id"] for _ in range(10)]
    set_account(app, merchant.member.account_id, payout_daily_cap=10**12)
    ids += [request(client, merchant, amount=10_000 - PIX_FEE).get_json()["id"] for _ in range(40)]

    def approve(payout_id):
        with app.test_client() as http:
            return _approve(http, staff, payout_id).status_code

    with ThreadPoolExecutor(max_workers=25) as pool:
        statuses = list(pool.map(approve, ids))
    assert statuses.count(200) == 10
    assert statuses.count(409) == 40
    assert available(client, merchant) == 0
    _ledger_is_clean(app)


def test_an_approval_made_while_redis_is_down_is_paid_by_the_sweep(
    app, client, merchant, staff, monkeypatch
):
    """Redis down at approval: the approval still commits and the cron sweep pays it later."""

    def redis_is_down(_name):
        raise RedisConnectionError("Connection refused")

    payout = request(client, merchant).get_json()
    with monkeypatch.context() as patch:
        patch.setattr("app.queueing.get_queue", redis_is_down)
        assert _approve(client, staff, payout["id"]).status_code == 200
    with app.app_context():
        assert payout_jobs.sweep_payouts() == 0  # a fresh approval is left to its own job
        db.session.execute(
            sa.update(Payout)
            .where(Payout.id == payout["id"])
            .values(updated_at=utcnow() - timedelta(minutes=2))
        )
        db.session.commit()
        assert payout_jobs.sweep_payouts() == 1
    body = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "COMPLETED"
    _ledger_is_clean(app)


@pytest.mark.postgres
def test_fifty_concurrent_auto_approved_requests_against_a_balance_for_ten(app, client, merchant):
    """On PostgreSQL: with auto-approval, 50 simultaneous requests debit exactly 10."""
    set_account(app, merchant.member.account_id, withdrawals_auto_approve=True)

    def send(_):
        with app.test_client() as http:
            response = request(http, merchant, amount=10_000 - PIX_FEE)
            return response.status_code, response.get_json()

    with ThreadPoolExecutor(max_workers=25) as pool:
        results = list(pool.map(send, range(50)))
    approved = [body for status, body in results if status == 201]
    refused = [body for status, body in results if status == 400]
    assert len(approved) == 10 and all(b["status"] == "APPROVED" for b in approved)
    assert len(refused) == 40
    assert all(b["error"]["code"] == "insufficient_funds" for b in refused)
    assert count_rows(app, Payout) == 10
    assert available(client, merchant) == 0
    _ledger_is_clean(app)


def test_staff_never_decide_payouts_of_their_own_account(app, client, merchant):
    """Four eyes: staff who belong to the account cannot approve or reject its payout."""
    payout = request(client, merchant).get_json()
    insider = factories.make_staff(app, "insider@acmepay.example.com")
    factories.make_member(app, merchant.member.account_id, Role.ADMIN, email=insider.email)
    with app.test_client() as browser:
        sign_in(browser, insider)
        for action in ("approve", "reject"):
            response = post_form(
                browser,
                "/dashboard/back-office",
                f"/dashboard/back-office/payouts/{payout['id']}/{action}",
            )
            assert response.status_code == 303
            page = browser.get("/dashboard/back-office").get_data(as_text=True)
            assert "may not decide payouts of an account they belong to" in page
    assert available(client, merchant) == 100_000
    status = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert status["status"] == "PENDING"


def test_rejecting_a_decided_payout_is_409(app, client, merchant, staff):
    payout = request(client, merchant).get_json()
    _approve(client, staff, payout["id"])
    response = client.post(f"/v1/admin/withdrawals/{payout['id']}/reject", headers=staff)
    assert_error(response, 409, "conflict_error", "withdrawal_not_pending")


def test_a_member_may_not_cancel(app, client, merchant):
    payout = request(client, merchant).get_json()
    member = factories.make_member(app, merchant.member.account_id, Role.MEMBER)
    response = client.post(
        f"/v1/withdrawals/{payout['id']}/cancel", headers=bearer(login(client, member))
    )
    assert_error(response, 403, "permission_error", "WITHDRAWAL_ROLE_REQUIRED")


def test_a_payout_must_be_worth_more_than_its_fee(app, client, merchant):
    response = request(client, merchant, amount=PIX_FEE)
    assert_error(response, 400, "invalid_request_error", "invalid_amount", param="amount")


def test_the_cnpj_checksum_waiver_applies_to_payouts_too(app, client, merchant):
    bad_checksum = "11222333000180"
    body = pix_payout(pixKey=bad_checksum, pixKeyType="CNPJ")
    refused = client.post("/v1/withdrawals?strictCnpj=false", json=body, headers=merchant.headers)
    assert_error(refused, 400, "invalid_request_error", "invalid_pix_key", param="pixKey")
    set_account(app, merchant.member.account_id, cnpj_checksum_waiver=True)
    strict = client.post(
        "/v1/withdrawals",
        json={**body, "idempotencyKey": "strict-cnpj-01"},
        headers=merchant.headers,
    )
    assert_error(strict, 400, "invalid_request_error", "invalid_pix_key", param="pixKey")
    waived = client.post(
        "/v1/withdrawals?strictCnpj=false",
        json={**body, "idempotencyKey": "waived-cnpj-01"},
        headers=merchant.headers,
    )
    assert waived.status_code == 201
    assert waived.get_json()["pixKey"] == bad_checksum


def test_an_unknown_provider_outcome_keeps_the_payout_processing(
    app, client, merchant, staff, monkeypatch
):
    """A provider outage is not a rejection: nothing is refunded, and the sweep retries."""
    payout = request(client, merchant).get_json()
    _approve(client, staff, payout["id"])

    def outage(self, request):
        raise ProviderError("PSP unavailable", code="timeout")

    with monkeypatch.context() as patch:
        patch.setattr("app.providers.sandbox.SandboxProvider.payout", outage)
        with app.app_context(), pytest.raises(ProviderError):
            payout_jobs.process_payout(payout["id"])
    body = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "PROCESSING"
    assert available(client, merchant) == 100_000 - 10_000 - PIX_FEE
    with app.app_context():
        assert payout_jobs.process_payout(payout["id"]) is None  # its sender is not yet silent
        stale = utcnow() + timedelta(minutes=6)
        assert payout_processing.start_processing(payout["id"], now=stale) is not None
        db.session.rollback()
        db.session.execute(
            sa.update(Payout)
            .where(Payout.id == payout["id"])
            .values(updated_at=utcnow() - timedelta(minutes=6))
        )
        db.session.commit()
        assert payout_jobs.sweep_payouts() == 1
    body = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "COMPLETED"
    _ledger_is_clean(app)


@pytest.mark.postgres
def test_two_senders_at_once_pay_a_payout_once(app, client, merchant, staff, monkeypatch):
    """On PostgreSQL: the job and a sweep (or the job twice) racing send it to the provider once."""
    payout = request(client, merchant).get_json()
    _approve(client, staff, payout["id"])
    calls = []
    original = SandboxProvider.payout

    def counted(self, request):
        calls.append(request.reference)
        return original(self, request)

    monkeypatch.setattr(SandboxProvider, "payout", counted)

    def process(_):
        with app.app_context():
            return payout_jobs.process_payout(payout["id"])

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(process, range(4)))
    assert sorted(results, key=str) == ["COMPLETED", None, None, None]
    assert calls == [payout["id"]]
    _ledger_is_clean(app)


@pytest.mark.postgres
def test_concurrent_requests_cannot_pass_the_daily_cap_together(app, client, merchant):
    set_account(app, merchant.member.account_id, payout_daily_cap=30_000)

    def send(index):
        with app.test_client() as http:
            return request(http, merchant, amount=9_900).status_code

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(send, range(20)))
    assert statuses.count(201) == 3
    with app.app_context():
        total = db.session.scalar(sa.select(sa.func.sum(Payout.amount)))
    assert total == 29_700


@pytest.mark.postgres
def test_approval_racing_cancellation_ends_one_way(app, client, merchant, staff):
    """On PostgreSQL: approve and cancel at once leave either APPROVED (debited) or CANCELLED."""
    payout = request(client, merchant).get_json()

    def approve(_):
        with app.test_client() as http:
            return _approve(http, staff, payout["id"]).status_code

    def cancel(_):
        with app.test_client() as http:
            return http.post(
                f"/v1/withdrawals/{payout['id']}/cancel", headers=merchant.headers
            ).status_code

    with ThreadPoolExecutor(max_workers=2) as pool:
        approved, cancelled = pool.submit(approve, 0), pool.submit(cancel, 0)
        outcome = (approved.result(), cancelled.result())
    status = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    if outcome == (200, 409):  # the cancel found it approved: a state conflict
        assert status["status"] in ("APPROVED", "PROCESSING", "COMPLETED")
        assert available(client, merchant) == 100_000 - 10_000 - PIX_FEE
    else:
        assert outcome == (409, 200)
        assert status["status"] == "CANCELLED"
        assert available(client, merchant) == 100_000
    result = app.test_cli_runner().invoke(check_ledger)
    assert result.exit_code == 0, result.output


def test_the_pix_key_check_is_not_read_as_a_payout_id(client, merchant):
    """Found by schemathesis on the deployed stack: GET /v1/withdrawals/<id> also matched
    /v1/withdrawals/validate-pix-key, so its Allow header offered an undocumented GET."""
    response = client.options("/v1/withdrawals/validate-pix-key")
    assert set(response.headers["Allow"].split(", ")) == {"POST", "OPTIONS"}
    assert_error(
        client.get("/v1/withdrawals/validate-pix-key", headers=merchant.headers),
        405,
        "invalid_request_error",
        "method_not_allowed",
    )
    assert_error(
        client.get("/v1/withdrawals/not-a-payout-id", headers=merchant.headers),
        404,
        "not_found_error",
        "not_found",
    )
