"""Live-mode keys through the real API against a fake PSP speaking API Pix: charges become
cobs, cancels remove them, refunds become devoluções polled to their end, and what API Pix
cannot do (Pix-outs, devoluções after 90 days) is refused before anything moves."""

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.jobs.payments import finalise_payment
from app.models import Transaction
from app.models.base import utcnow
from app.providers.api_pix.mapping import REMOVED_BY_RECEIVER, txid_for
from app.providers.api_pix.settings_check import validate_api_pix
from app.services import api_pix_inbound
from app.services.transactions import pix_payments
from tests.support import factories, payments, refunds
from tests.support.charges import CPF, create, created, get, raw, update_row
from tests.support.fake_api_pix import RECEIVER_KEY
from tests.support.http import bearer, login
from tests.support.payments import refund
from tests.support.payouts import pix_payout, run_jobs

PAYER = {"cpf": CPF, "nome": "Ana Souza"}


def live_charge(api, merchant, **overrides) -> dict:
    body = {"customer": {"name": "Ana Souza", "document": CPF}, **overrides}
    return created(api, merchant.api_key, **body)


def txid_of(charge: dict) -> str:
    return txid_for(raw(charge["id"]))


def received_by_us(app, psp, charge: dict) -> dict:
    """The payer pays the cob at the PSP and the Pix reaches us as its webhook brings it."""
    pix = psp.pay(txid_of(charge), payer=PAYER)
    with app.app_context():
        entry = api_pix_inbound.read_listed(pix)
        pix_payments.receive(
            raw(charge["id"]),
            pix_payments.IncomingPix(
                end_to_end_id=entry.end_to_end_id,
                amount=entry.amount,
                payer_document=entry.payer_document,
                payer_name=entry.payer_name,
                received_at=entry.received_at,
            ),
        )
        db.session.commit()
    return entry


def paid_live_charge(app, api, merchant, live, amount: int = 20_000):
    charge = live_charge(api, merchant, amount=amount)
    entry = received_by_us(app, live, charge)
    refunds.release(app)
    return charge, entry


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


# Charges


def test_a_live_charge_is_a_cob_at_the_psp(api, merchant, live):
    charge = live_charge(api, merchant, amount=12_345, expires_in=600)

    txid = txid_of(charge)
    (put,) = live.calls("PUT", "/cob/")
    assert put.path == f"/cob/{txid}"
    assert put.body == {
        "calendario": {"expiracao": 600},
        "valor": {"original": "123.45"},
        "chave": RECEIVER_KEY,
        "devedor": {"cpf": CPF, "nome": "Ana Souza"},
        "solicitacaoPagador": "Pedido 42",
    }
    cob = live.cobs[txid]
    assert charge["status"] == "pending"
    assert charge["pix"]["br_code"] == cob["pixCopiaECola"]
    assert charge["pix"]["txid"] == txid
    assert charge["pix"]["qr_code_url"].endswith("/qr.png")
    assert api.get(charge["pix"]["qr_code_url"]).status_code == 200


def test_a_long_description_reaches_the_payer_cut_on_a_word_boundary(api, merchant, live):
    description = "Assinatura anual Loja Exemplo, " + "plano família com entrega grátis " * 12

    charge = live_charge(api, merchant, description=description)

    (put,) = live.calls("PUT", "/cob/")
    shown = put.body["solicitacaoPagador"]
    assert len(shown) <= 140 and description.startswith(shown)
    assert description[len(shown)] == " "
    assert charge["metadata"]["description"] == description  # ours is kept whole


def test_a_payer_lock_the_psp_cannot_check_is_refused_at_creation(
    api, merchant, live, app, monkeypatch
):
    """A PSP that sends only the standard's fields names no payer: such a charge would wait
    for manual review for ever, so it is refused while the merchant can still choose."""
    monkeypatch.setitem(app.config, "API_PIX_PAYER_DOCUMENT_PATH", "none")

    response = create(
        api,
        merchant.api_key,
        customer={"name": "Ana Souza", "document": CPF},
        expected_payer_tax_id=CPF,
    )

    error = error_of(response, 422)
    assert error["code"] == "unprocessable_entity"
    assert error["param"] == "expected_payer_tax_id"
    assert "does not report the payer's document" in error["message"]
    assert live.calls("PUT", "/cob/") == []
    assert live_charge(api, merchant)["status"] == "pending"  # without the lock it is made


def test_a_masked_payer_document_holds_a_locked_charge_for_review(app, api, merchant, live):
    """Some PSPs mask the payer's CPF: that proves nothing, so neither paid nor returned."""
    charge = live_charge(api, merchant, expected_payer_tax_id=CPF)

    pix = live.pay(txid_of(charge), payer={"cpf": "***.982.247-**", "nome": "Ana Souza"})
    with app.app_context():
        api_pix_inbound.apply_received([api_pix_inbound.read_listed(pix)])
        db.session.commit()

    assert get(api, merchant.api_key, charge["id"]).get_json()["status"] == "processing"
    assert live.calls("PUT", "/pix/") == []  # nothing returned on a guess


def test_a_lost_answer_is_asked_again_with_the_same_txid(api, merchant, live):
    live.fail_next("timeout")  # the PSP creates the cob, the answer comes too late

    charge = live_charge(api, merchant)

    puts = live.calls("PUT", "/cob/")
    assert [call.path for call in puts] == [f"/cob/{txid_of(charge)}"] * 2
    assert list(live.cobs) == [txid_of(charge)]
    assert charge["pix"]["br_code"] == live.cobs[txid_of(charge)]["pixCopiaECola"]


def test_a_refused_repeat_reads_the_cob_back(api, merchant, live):
    live.fail_next("timeout")
    live.fail_next(409)  # a PSP that refuses a second PUT of a txid it holds

    charge = live_charge(api, merchant)

    txid = txid_of(charge)
    assert [(call.method, call.path) for call in live.requests if call.path != "/oauth/token"] == [
        ("PUT", f"/cob/{txid}"),
        ("PUT", f"/cob/{txid}"),
        ("GET", f"/cob/{txid}"),
    ]
    assert charge["status"] == "pending"
    assert charge["pix"]["br_code"] == live.cobs[txid]["pixCopiaECola"]


def test_a_refusal_fails_the_charge_with_the_psp_reason(app, api, merchant, live, monkeypatch):
    monkeypatch.setitem(app.config, "API_PIX_RECEIVER_PIX_KEY", "ana@example.com")

    charge = live_charge(api, merchant)

    assert charge["status"] == "failed"
    assert charge["pix"] is None
    failure = charge["metadata"]["failure"]
    assert failure["providerErrorCode"] == "CobOperacaoInvalida"
    assert "A chave não pertence ao recebedor." in failure["reason"]


def test_an_outage_is_503_and_a_retry_with_the_same_key_succeeds(app, api, merchant, live):
    live.fail_next(503)
    live.fail_next(503)
    key = uuid.uuid4().hex

    failed = create(api, merchant.api_key, idempotency_key=key, amount=5_000)

    assert error_of(failed, 503)["code"] == "service_unavailable"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Transaction)) == 0
    retried = create(api, merchant.api_key, idempotency_key=key, amount=5_000)
    assert retried.status_code == 201
    assert retried.get_json()["status"] == "pending"


def test_refused_credentials_are_503_never_a_failed_charge(app, api, merchant, live, monkeypatch):
    """A client or scope the PSP refuses is our setup, not the merchant's charge."""
    monkeypatch.setitem(app.config, "API_PIX_CLIENT_SECRET", "revoked-secret")

    answer = create(api, merchant.api_key, amount=5_000)

    assert error_of(answer, 503)["code"] == "service_unavailable"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Transaction)) == 0
    assert live.calls("PUT", "/cob/") == []


def test_a_token_revoked_mid_way_is_fetched_again(api, merchant, live):
    charge = live_charge(api, merchant)
    live.revoke_tokens()

    answer = api.get(
        f"/v1/payments/{charge['id']}/provider-status", headers={"apikey": merchant.api_key}
    )

    assert answer.status_code == 200
    assert live.tokens_issued == 2


def test_provider_status_is_the_live_cob(api, merchant, live):
    charge = live_charge(api, merchant)
    live.pay(txid_of(charge))  # paid at the PSP, not yet heard of here

    status = api.get(
        f"/v1/payments/{charge['id']}/provider-status", headers={"apikey": merchant.api_key}
    ).get_json()

    assert status["localStatus"] == "WAITING_PAYMENT"
    assert status["provider"] == "api_pix"
    assert status["providerTransactionId"] == txid_of(charge)
    assert status["providerStatus"] == "CONCLUIDA"
    assert status["rawResponse"]["pixCopiaECola"] == charge["pix"]["br_code"]


def test_provider_status_during_an_outage_is_503(api, merchant, live):
    charge = live_charge(api, merchant)
    live.fail_next(500)

    answer = api.get(
        f"/v1/payments/{charge['id']}/provider-status", headers={"apikey": merchant.api_key}
    )

    assert error_of(answer, 503)["code"] == "service_unavailable"


def test_cancel_removes_the_cob(api, merchant, live):
    charge = live_charge(api, merchant)

    cancelled = api.post(
        f"/v1/payments/{charge['id']}/cancel", headers={"apikey": merchant.api_key}
    )

    assert cancelled.status_code == 200
    assert cancelled.get_json()["status"] == "CANCELLED"
    (patch,) = live.calls("PATCH", "/cob/")
    assert patch.body == {"status": REMOVED_BY_RECEIVER}
    assert live.cobs[txid_of(charge)]["status"] == REMOVED_BY_RECEIVER


def test_cancel_of_a_cob_paid_meanwhile_is_refused(api, merchant, live):
    charge = live_charge(api, merchant)
    live.pay(txid_of(charge))

    refused = api.post(f"/v1/payments/{charge['id']}/cancel", headers={"apikey": merchant.api_key})

    assert error_of(refused, 409)["code"] == "transaction_not_cancellable"
    status = api.get(f"/v1/charges/{charge['id']}", headers={"apikey": merchant.api_key})
    assert status.get_json()["status"] == "pending"


def test_live_payments_offer_pix_only(api, merchant, live):
    answer = payments.create(api, merchant.api_key, paymentMethods=["BOLETO"])

    assert error_of(answer, 422)["code"] == "unprocessable_entity"


def test_a_live_payment_outlives_an_outage_with_its_txid(app, redis, api, merchant, live):
    live.fail_next(503)
    live.fail_next(503)
    payment = payments.created(api, merchant.api_key)
    run_jobs(app, redis)  # the outcome is unknown: it stays PENDING for the sweep
    assert payments.get(api, merchant.api_key, payment["id"]).get_json()["status"] == "PENDING"

    with app.app_context():
        finalise_payment(payment["id"].removeprefix("tx_"))

    finalised = payments.get(api, merchant.api_key, payment["id"]).get_json()
    assert finalised["status"] == "WAITING_PAYMENT"
    txids = {call.path for call in live.calls("PUT", "/cob/")}
    assert txids == {f"/cob/{txid_for(payment['id'].removeprefix('tx_'))}"}
    assert finalised["pixCopyPaste"] == next(iter(live.cobs.values()))["pixCopiaECola"]


# Refunds


@pytest.mark.parametrize(
    ("settled", "expected"), [("DEVOLVIDO", "REFUNDED"), ("NAO_REALIZADO", "FAILED")]
)
def test_a_refund_is_a_devolucao_polled_to_its_end(
    app, redis, api, merchant, live, settled, expected
):
    charge, entry = paid_live_charge(app, api, merchant, live)
    before = refunds.available(api, merchant)

    asked = refunds.refunded(api, merchant, charge["id"], amount=5_000, strategy="devolution")
    refunds.submit_and_poll(app, redis)

    (put,) = live.calls("PUT", "/pix/")
    assert put.path == f"/pix/{entry.end_to_end_id}/devolucao/{uuid.UUID(asked['id']).hex}"
    assert put.body == {"valor": "50.00", "natureza": "ORIGINAL"}
    assert refunds.refund_row(app, asked["id"]).status == "IN_PROGRESS"

    live.settle_devolucao(
        entry.end_to_end_id, uuid.UUID(asked["id"]).hex, settled, "Conta encerrada"
    )
    refunds.poll(app)

    row = refunds.refund_row(app, asked["id"])
    assert row.status == expected
    if expected == "FAILED":
        assert "Conta encerrada" in row.failure_reason
        assert refunds.available(api, merchant) == before
    else:
        assert refunds.available(api, merchant) == before - 5_000


def test_a_devolucao_status_of_a_newer_release_keeps_the_refund_polled(
    app, redis, api, merchant, live, caplog
):
    charge, entry = paid_live_charge(app, api, merchant, live)
    asked = refunds.refunded(api, merchant, charge["id"], amount=5_000, strategy="devolution")
    refunds.submit_and_poll(app, redis)
    devolucao_id = uuid.UUID(asked["id"]).hex
    live.allow_future_enum_value("EM_ANALISE")
    live.set_devolucao_status(entry.end_to_end_id, devolucao_id, "EM_ANALISE")

    refunds.poll(app)

    assert refunds.refund_row(app, asked["id"]).status == "IN_PROGRESS"  # nothing guessed
    assert any(getattr(r, "status", None) == "EM_ANALISE" for r in caplog.records)
    live.settle_devolucao(entry.end_to_end_id, devolucao_id)
    refunds.poll(app)
    assert refunds.refund_row(app, asked["id"]).status == "REFUNDED"


def test_a_devolution_after_90_days_is_refused_before_the_psp(app, api, merchant, live):
    charge, _ = paid_live_charge(app, api, merchant, live)
    update_row(app, charge["id"], paid_at=utcnow() - timedelta(days=91))

    refused = refund(api, merchant.api_key, charge["id"], strategy="devolution")

    error = error_of(refused, 409)
    assert error["code"] == "refund_window_expired"
    assert "no Pix-outs" in error["message"]
    assert live.calls("PUT", "/pix/") == []


def test_a_live_cashout_refund_is_422(app, api, merchant, live):
    charge, _ = paid_live_charge(app, api, merchant, live)

    refused = refund(api, merchant.api_key, charge["id"])  # cashout, the default

    error = error_of(refused, 422)
    assert error["code"] == "unprocessable_entity"
    assert "devolution" in error["message"]


# Payouts and configuration


def test_live_payouts_stay_422(app, api, live):
    member = factories.make_member(app)
    headers = bearer(login(api, member))

    answer = api.post("/v1/withdrawals", json=pix_payout(test=False), headers=headers)

    assert error_of(answer, 422)["code"] == "unprocessable_entity"
    assert live.requests == []


def test_without_a_base_url_live_keys_get_422(api, merchant, psp):
    answer = create(api, merchant.api_key)

    error = error_of(answer, 422)
    assert error["code"] == "unprocessable_entity"
    assert "No provider serves Pix in live mode" in error["message"]
    assert psp.requests == []


def test_start_up_refuses_an_incomplete_api_pix(app, psp):
    settings = {**app.config, **psp.config(API_PIX_CLIENT_SECRET="")}
    with pytest.raises(RuntimeError, match="API_PIX_CLIENT_SECRET"):
        validate_api_pix(settings)
    production = {**app.config, **psp.config(), "APP_ENV": "production"}
    with pytest.raises(RuntimeError, match="mutual TLS"):
        validate_api_pix(production)
    validate_api_pix({**app.config, **psp.config()})


@pytest.mark.parametrize(("secret", "starts"), [("", False), ("s" * 31, False), ("s" * 32, True)])
def test_outside_development_the_webhook_secret_is_long(app, psp, tmp_path, secret, starts):
    certificate = tmp_path / "client.pem"
    certificate.write_text("not read at start-up")
    production = {
        **app.config,
        **psp.config(
            API_PIX_BASE_URL="https://pix.example.com/api/v2",
            API_PIX_TOKEN_URL="https://pix.example.com/oauth/token",
            API_PIX_CERT_PATH=str(certificate),
        ),
        "APP_ENV": "production",
        "API_PIX_WEBHOOK_SECRET": secret,
    }
    if starts:
        validate_api_pix(production)
    else:
        with pytest.raises(RuntimeError, match="API_PIX_WEBHOOK_SECRET must have at least 32"):
            validate_api_pix(production)
    validate_api_pix({**production, "APP_ENV": "development"})
