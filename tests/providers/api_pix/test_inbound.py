"""The live PSP's inbound side: its webhook (`POST /v1/api-pix/webhook/<secret>/pix`) and the
reconciliation job, against the fake PSP, with live charges created through the API."""

import logging
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa
from rq import SimpleWorker

from app.extensions import db, get_queue
from app.jobs import api_pix as api_pix_jobs
from app.models import (
    DisputeCase,
    KeyMode,
    PspNotice,
    PspNoticeKind,
    ReceivedPix,
    ReceivedPixOutcome,
    RefundStatus,
)
from app.models.base import utcnow
from app.pix.identifiers import new_end_to_end_id, new_return_id
from app.providers.api_pix.mapping import devolucao_id_for, txid_for, valor
from app.services.disputes import cases
from tests.support import charges, factories
from tests.support import refunds as refund_support
from tests.support.charges import CPF
from tests.support.fake_api_pix import PSP_ISPB, RECEIVER_KEY
from tests.support.payouts import run_jobs

SECRET = "s3cr3t-path-token-0123456789abcdef"
AMOUNT = 2500


@pytest.fixture
def client(app):
    """The Flask test client (this folder's conftest names the API Pix client `client`)."""
    return app.test_client()


@pytest.fixture
def live(app, monkeypatch, psp):
    """A merchant with a live key (no fees, instant release), the live provider pointed at
    the fake PSP, and our webhook secret set."""
    merchant = refund_support.merchant(app, monkeypatch)
    for name, value in psp.config().items():
        monkeypatch.setitem(app.config, name, value)
    monkeypatch.setitem(app.config, "API_PIX_WEBHOOK_SECRET", SECRET)
    return refund_support.Merchant(
        account_id=merchant.account_id,
        api_key=factories.make_api_key(app, merchant.account_id, KeyMode.LIVE),
    )


def live_charge(app, client, live, amount: int = AMOUNT, **overrides) -> dict:
    charge = charges.created(client, live.api_key, amount=amount, **overrides)
    assert refund_support.transaction_row(app, charge["id"]).mode is KeyMode.LIVE
    return charge


def txid_of(charge: dict) -> str:
    return txid_for(charges.raw(charge["id"]))


def post_webhook(client, body, secret: str = SECRET):
    return client.post(f"/v1/api-pix/webhook/{secret}/pix", json=body)


def delivered(client, body) -> None:
    response = post_webhook(client, body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {}


def status(client, live, charge: dict) -> str:
    return charges.get(client, live.api_key, charge["id"]).get_json()["status"]


def balance(client, live) -> dict:
    response = client.get("/v1/wallets/balance?currency=BRL", headers={"apikey": live.api_key})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def received_rows(app, charge: dict) -> list[ReceivedPix]:
    with app.app_context():
        rows = db.session.scalars(
            sa.select(ReceivedPix).where(ReceivedPix.transaction_id == charges.raw(charge["id"]))
        ).all()
        db.session.expunge_all()
        return rows


def notices(app, kind: PspNoticeKind) -> list[PspNotice]:
    with app.app_context():
        rows = db.session.scalars(sa.select(PspNotice).where(PspNotice.kind == kind)).all()
        db.session.expunge_all()
        return rows


def run_reconciliation(app, redis):
    """One run of the `rq cron` job by a real RQ worker."""
    with app.app_context():
        queue = get_queue("money")
        job = queue.enqueue(api_pix_jobs.reconcile_received_pix)
        SimpleWorker([queue], connection=redis).work(burst=True)
        job.refresh()
        assert job.get_status() == "finished"
        return job.return_value()


# Paying a charge


def test_a_webhook_pays_the_live_charge_once(app, client, live, psp):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))

    delivered(client, psp.webhook_body(pix["endToEndId"]))

    assert status(client, live, charge) == "paid"
    assert charges.event_types(app, charge["id"]).count("charge.paid") == 1
    credited = balance(client, live)
    assert credited["available"] + credited["pending"] == AMOUNT

    delivered(client, psp.webhook_body(pix["endToEndId"]))  # the PSP delivers it again

    assert charges.event_types(app, charge["id"]).count("charge.paid") == 1
    assert balance(client, live) == credited
    (row,) = received_rows(app, charge)
    assert row.outcome is ReceivedPixOutcome.CREDITED
    refund_support.assert_ledger_clean(app)


def test_one_call_may_carry_several_pix(app, client, live, psp):
    first, second = live_charge(app, client, live), live_charge(app, client, live, amount=990)
    paid = [psp.pay(txid_of(first)), psp.pay(txid_of(second))]

    delivered(client, psp.webhook_body(*(pix["endToEndId"] for pix in paid)))

    assert status(client, live, first) == status(client, live, second) == "paid"
    credited = balance(client, live)
    assert credited["available"] + credited["pending"] == AMOUNT + 990


def test_a_pix_for_no_charge_of_ours_is_acknowledged_and_kept_for_the_back_office(
    app, client, live, psp
):
    static = psp.receive(990)  # a static QR code: no txid
    foreign = psp.receive(1500, txid="pedido42")  # another system's charge: a short txid

    delivered(client, psp.webhook_body(static["endToEndId"], foreign["endToEndId"]))
    delivered(client, psp.webhook_body(foreign["endToEndId"]))  # delivered again

    unmatched = notices(app, PspNoticeKind.UNMATCHED_PIX)
    assert {notice.subject for notice in unmatched} == {
        static["endToEndId"],
        foreign["endToEndId"],
    }
    by_subject = {notice.subject: notice for notice in unmatched}
    assert by_subject[foreign["endToEndId"]].occurrences == 2
    assert by_subject[foreign["endToEndId"]].reported["txid"] == "pedido42"
    assert "of BRL 9.90 " in by_subject[static["endToEndId"]].detail
    assert balance(client, live)["pending"] == 0


def test_a_test_mode_charge_is_never_paid_by_the_live_psp(app, client, live, psp):
    sandbox_key = factories.make_api_key(app, live.account_id)
    charge = charges.created(client, sandbox_key)
    pix = psp.pay(txid_of(live_charge(app, client, live)))
    body = psp.webhook_body(pix["endToEndId"])
    body["pix"][0]["txid"] = refund_support.transaction_row(app, charge["id"]).pix_txid

    delivered(client, body)

    assert charges.get(client, sandbox_key, charge["id"]).get_json()["status"] == "pending"


# Authenticity: a webhook names Pix, the PSP says what they are


def forged_body(psp, charge: dict, amount: int = AMOUNT) -> dict:
    """What an attacker holding the path secret would post: a well-formed Pix the PSP never
    received, for a real pending charge, of its exact amount."""
    return {
        "pix": [
            {
                "endToEndId": new_end_to_end_id("87654321", utcnow()),
                "txid": txid_of(charge),
                "valor": valor(amount),
                "chave": RECEIVER_KEY,
                "horario": utcnow().isoformat().replace("+00:00", "Z"),
                "pagador": {"cpf": CPF, "nome": "Ana Souza"},
            }
        ]
    }


def test_a_forged_webhook_never_credits(app, client, live, psp, caplog):
    charge = live_charge(app, client, live)
    body = forged_body(psp, charge)
    forged_e2eid = body["pix"][0]["endToEndId"]

    with caplog.at_level(logging.ERROR, logger="app.services.psp_notices"):
        delivered(client, body)  # 200: the PSP has nothing to re-deliver
        delivered(client, body)

    assert status(client, live, charge) == "pending"
    assert received_rows(app, charge) == []
    assert balance(client, live)["pending"] == balance(client, live)["available"] == 0
    assert charges.event_types(app, charge["id"]).count("charge.paid") == 0
    assert len(psp.calls("GET", f"/pix/{forged_e2eid}")) == 2  # never cached
    (notice,) = notices(app, PspNoticeKind.UNCONFIRMED_PIX)
    assert notice.subject == forged_e2eid and notice.occurrences == 2
    assert "the PSP has no such Pix" in notice.detail
    (logged,) = [r for r in caplog.records if getattr(r, "kind", None) == "unconfirmed_pix"]
    assert logged.levelno == logging.ERROR
    refund_support.assert_ledger_clean(app)

    pix = psp.pay(txid_of(charge))  # the real payment still pays the charge
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    assert status(client, live, charge) == "paid"


def test_a_tampered_webhook_is_flagged_and_only_the_psps_record_applies(app, client, live, psp):
    cheap, dear = live_charge(app, client, live, amount=100), live_charge(app, client, live)
    pix = psp.pay(txid_of(cheap))
    body = psp.webhook_body(pix["endToEndId"])
    body["pix"][0].update(txid=txid_of(dear), valor=valor(AMOUNT))  # "it paid the dear one"

    delivered(client, body)

    assert status(client, live, dear) == "pending"
    assert status(client, live, cheap) == "paid"  # what the PSP really received
    credited = balance(client, live)
    assert credited["available"] + credited["pending"] == 100
    (notice,) = notices(app, PspNoticeKind.UNCONFIRMED_PIX)
    assert "txid, amount differ" in notice.detail


def test_a_confirmation_is_remembered_for_redeliveries_and_reconciliation(
    app, client, live, psp, redis
):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    listed = psp.pay(txid_of(live_charge(app, client, live, amount=990)))

    delivered(client, psp.webhook_body(pix["endToEndId"]))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    run_reconciliation(app, redis)
    delivered(client, psp.webhook_body(listed["endToEndId"]))  # listed before it came

    assert len(psp.calls("GET", f"/pix/{pix['endToEndId']}")) == 1
    assert psp.calls("GET", f"/pix/{listed['endToEndId']}") == []
    assert status(client, live, charge) == "paid"


def test_news_in_a_redelivery_is_confirmed_again(app, client, live, psp):
    """A cached confirmation vouches for what was confirmed, not for a new devolução."""
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], pix_expires_at=utcnow() - timedelta(seconds=1))
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    (refund,) = refund_support.refund_rows(app, charge["id"])
    body = psp.webhook_body(pix["endToEndId"])
    body["pix"][0]["devolucoes"][0]["status"] = "DEVOLVIDO"  # claimed, not yet true

    delivered(client, body)

    assert len(psp.calls("GET", f"/pix/{pix['endToEndId']}")) == 2
    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.IN_PROGRESS  # the PSP's record says so
    psp.settle_devolucao(pix["endToEndId"], devolucao_id_for(refund.id))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.REFUNDED


def test_a_psp_outage_while_confirming_is_503_and_nothing_is_applied(app, client, live, psp):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    psp.fail_next(503)

    response = post_webhook(client, psp.webhook_body(pix["endToEndId"]))

    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "provider_unavailable"
    assert status(client, live, charge) == "pending"
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    assert status(client, live, charge) == "paid"


# A tolerant reader: a newer release's values never block a payment


def test_an_unknown_devolucao_status_never_blocks_the_payment(app, client, live, psp):
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], pix_expires_at=utcnow() - timedelta(seconds=1))
    returned = psp.pay(txid_of(charge))  # paid too late: returned by a devolução of ours
    delivered(client, psp.webhook_body(returned["endToEndId"]))
    (refund,) = refund_support.refund_rows(app, charge["id"])
    other = live_charge(app, client, live)
    paid = psp.pay(txid_of(other))
    psp.allow_future_enum_value("DEVOLVIDO_PARCIALMENTE")
    psp.set_devolucao_status(
        returned["endToEndId"], devolucao_id_for(refund.id), "DEVOLVIDO_PARCIALMENTE"
    )
    med_devolucao(psp, paid["endToEndId"], "EM_PROCESSAMENTO", natureza="MED_NOVA")
    psp.allow_future_enum_value("MED_NOVA")

    delivered(client, psp.webhook_body(returned["endToEndId"], paid["endToEndId"]))
    delivered(client, psp.webhook_body(returned["endToEndId"]))

    assert status(client, live, other) == "paid"  # the rest of the Pix is applied
    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.IN_PROGRESS  # nothing decided on a guess
    unknown = {notice.subject: notice for notice in notices(app, PspNoticeKind.UNKNOWN_VALUE)}
    assert set(unknown) == {
        "devolucao.status=DEVOLVIDO_PARCIALMENTE",
        "devolucao.natureza=MED_NOVA",
    }
    assert unknown["devolucao.status=DEVOLVIDO_PARCIALMENTE"].occurrences == 2
    assert cases_of(app, other) == []


def test_reconciliation_reads_a_newer_release_and_pix_of_no_charge(app, client, live, psp, redis):
    charge = live_charge(app, client, live)
    psp.allow_future_enum_value("DEVOLVIDO_PARCIALMENTE")
    pix = psp.pay(txid_of(charge))
    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO_PARCIALMENTE")
    static = psp.receive(700)

    run_reconciliation(app, redis)

    assert status(client, live, charge) == "disputed"  # credited, then the MED case opened
    assert [n.subject for n in notices(app, PspNoticeKind.UNMATCHED_PIX)] == [static["endToEndId"]]
    (unknown,) = notices(app, PspNoticeKind.UNKNOWN_VALUE)
    assert unknown.subject == "devolucao.status=DEVOLVIDO_PARCIALMENTE"
    (case,) = cases_of(app, charge)
    assert not case.is_final  # linked, never decided by a status we do not know


# The sandbox's settlement rules, through the live PSP


def test_another_amount_is_refused_and_the_charge_stays_pending(app, client, live, psp):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge), amount=AMOUNT - 1)

    delivered(client, psp.webhook_body(pix["endToEndId"]))

    assert status(client, live, charge) == "pending"
    (row,) = received_rows(app, charge)
    assert row.outcome is ReceivedPixOutcome.REFUSED_AMOUNT
    assert balance(client, live)["pending"] == 0


def test_a_pix_after_expiry_is_returned_and_its_devolucao_settles_by_webhook(
    app, client, live, psp
):
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], pix_expires_at=utcnow() - timedelta(seconds=1))
    pix = psp.pay(txid_of(charge))

    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (row,) = received_rows(app, charge)
    assert row.outcome is ReceivedPixOutcome.RETURNED_AFTER_EXPIRY
    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.automatic and refund.status is RefundStatus.IN_PROGRESS
    assert balance(client, live)["pending"] == 0
    devolucao_id = devolucao_id_for(refund.id)
    assert [d["id"] for d in psp.pix[pix["endToEndId"]]["devolucoes"]] == [devolucao_id]

    psp.settle_devolucao(pix["endToEndId"], devolucao_id)
    body = psp.webhook_body(pix["endToEndId"])
    body["pix"][0]["devolucoes"] = body["pix"][0]["devolucoes"][0]  # an object, not a list
    delivered(client, body)

    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.REFUNDED
    assert refund.completed_at is not None
    assert len(received_rows(app, charge)) == 1


def test_a_psp_outage_while_returning_is_503_and_the_redelivery_returns_once(
    app, client, live, psp
):
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], pix_expires_at=utcnow() - timedelta(seconds=1))
    pix = psp.pay(txid_of(charge))
    psp.fail_next(503)

    response = post_webhook(client, psp.webhook_body(pix["endToEndId"]))

    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "provider_unavailable"
    assert received_rows(app, charge) == []  # nothing kept: the PSP delivers it again
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    assert len(refund_support.refund_rows(app, charge["id"])) == 1
    assert len(psp.pix[pix["endToEndId"]]["devolucoes"]) == 1


def test_a_failed_return_is_recorded_and_never_undone(app, client, live, psp):
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], pix_expires_at=utcnow() - timedelta(seconds=1))
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    (refund,) = refund_support.refund_rows(app, charge["id"])

    psp.settle_devolucao(
        pix["endToEndId"], devolucao_id_for(refund.id), "NAO_REALIZADO", motivo="Conta encerrada"
    )
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    psp.settle_devolucao(pix["endToEndId"], devolucao_id_for(refund.id), "DEVOLVIDO")
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.FAILED
    assert refund.failure_reason == "Conta encerrada"


def test_a_merchant_refund_completes_when_the_psp_reports_it(app, client, live, psp, redis):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    refund_support.release(app)
    refund_support.refunded(client, live, charge["id"], strategy="devolution")
    run_jobs(app, redis)  # submitted: the devolução is asked for at the PSP
    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.IN_PROGRESS

    psp.settle_devolucao(pix["endToEndId"], devolucao_id_for(refund.id))
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (refund,) = refund_support.refund_rows(app, charge["id"])
    assert refund.status is RefundStatus.REFUNDED
    assert status(client, live, charge) == "refunded"
    assert balance(client, live)["available"] == 0
    refund_support.assert_ledger_clean(app)


# MED


def med_devolucao(psp, end_to_end_id: str, status: str, natureza: str = "MED_FRAUDE") -> dict:
    """The PSP records (or moves) a MED devolução on a received Pix."""
    devolucoes = psp.pix[end_to_end_id]["devolucoes"]
    existing = next((d for d in devolucoes if d["id"] == "MED1FR01"), None)
    if existing is not None:
        existing["status"] = status
        return existing
    devolucao = {
        "id": "MED1FR01",
        "rtrId": new_return_id(PSP_ISPB, utcnow()),
        "valor": psp.pix[end_to_end_id]["valor"],
        "natureza": natureza,
        "horario": {"solicitacao": psp.pix[end_to_end_id]["horario"]},
        "status": status,
    }
    devolucoes.append(devolucao)
    return devolucao


def cases_of(app, charge: dict) -> list[DisputeCase]:
    with app.app_context():
        rows = db.session.scalars(
            sa.select(DisputeCase).where(DisputeCase.transaction_id == charges.raw(charge["id"]))
        ).all()
        db.session.expunge_all()
        return rows


def test_a_med_devolucao_opens_a_case_and_loses_it_once_settled(app, client, live, psp):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    med_devolucao(psp, pix["endToEndId"], "EM_PROCESSAMENTO")
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (case,) = cases_of(app, charge)
    assert (case.source, case.external_id, case.status) == ("api_pix", "MED1FR01", "open")
    assert case.held_amount == AMOUNT and case.reference_id == pix["endToEndId"]
    assert status(client, live, charge) == "disputed"

    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO")
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    delivered(client, psp.webhook_body(pix["endToEndId"]))  # and again

    (case,) = cases_of(app, charge)
    assert (case.status, case.money_outcome) == ("rejected", "lost")
    assert "MED1FR01" in case.decision_note and "MED_FRAUDE" in case.decision_note
    refund_support.assert_ledger_clean(app)


def test_a_med_devolucao_decides_the_case_already_open(app, client, live, psp, caplog):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    with app.app_context():
        cases.open_case(
            charges.raw(charge["id"]),
            cases.DisputeNotice(external_id="infraction-77"),
            source="back_office",
        )
        db.session.commit()

    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO", natureza="MED_OPERACIONAL")
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    with caplog.at_level(logging.ERROR, logger="app.services.api_pix_inbound"):
        delivered(client, psp.webhook_body(pix["endToEndId"]))  # a re-delivery: nothing new

    (case,) = cases_of(app, charge)
    assert (case.external_id, case.money_outcome) == ("infraction-77", "lost")
    assert "MED_OPERACIONAL" in case.decision_note
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_med_devolucao_never_decides_a_case_holding_another_amount(
    app, client, live, psp, caplog
):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))
    with app.app_context():
        cases.open_case(
            charges.raw(charge["id"]),
            cases.DisputeNotice(external_id="infraction-78"),
            source="back_office",
        )
        db.session.commit()

    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO")["valor"] = valor(AMOUNT - 100)
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (case,) = cases_of(app, charge)
    assert (case.external_id, case.status, case.held_amount) == ("infraction-78", "open", AMOUNT)
    assert not case.under_review
    (error,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "not booked" in error.getMessage() and error.devolucao_id == "MED1FR01"


def test_a_pix_automatico_med_devolucao_is_a_med_case(app, client, live, psp):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO", natureza="MED_PIX_AUTOMATICO")
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    (case,) = cases_of(app, charge)
    assert (case.external_id, case.money_outcome) == ("MED1FR01", "lost")
    assert "MED_PIX_AUTOMATICO" in case.decision_note
    refund_support.assert_ledger_clean(app)


def test_a_settled_med_devolucao_that_cannot_be_booked_is_an_error(app, client, live, psp, caplog):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge), amount=AMOUNT - 1)  # refused: the charge stays unpaid
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    med_devolucao(psp, pix["endToEndId"], "DEVOLVIDO")
    delivered(client, psp.webhook_body(pix["endToEndId"]))

    assert cases_of(app, charge) == []
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert [record.devolucao_id for record in errors] == ["MED1FR01"]


# Refusals


@pytest.mark.parametrize("secret", ["wrong-secret", SECRET[:-1], "x"])
def test_a_wrong_secret_is_an_unknown_route(app, client, live, psp, secret):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))

    response = post_webhook(client, psp.webhook_body(pix["endToEndId"]), secret=secret)

    unknown = client.post("/v1/no-such-route", json={})
    assert response.status_code == 404
    assert response.get_json()["error"] == unknown.get_json()["error"]
    assert status(client, live, charge) == "pending"


def test_without_a_configured_secret_every_call_is_refused(app, client, live, psp, monkeypatch):
    monkeypatch.setitem(app.config, "API_PIX_WEBHOOK_SECRET", "")
    assert post_webhook(client, {"pix": []}, secret="anything").status_code == 404


@pytest.mark.parametrize("secret", [SECRET, "wrong-secret"])
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_the_request_log_never_shows_the_path_secret(app, client, live, caplog, secret, method):
    caplog.set_level(logging.INFO, logger="acme.request")

    client.open(f"/v1/api-pix/webhook/{secret}/pix", method=method, json={"pix": []})

    (line,) = [record for record in caplog.records if record.name == "acme.request"]
    assert line.path == "/v1/api-pix/webhook/***/pix"
    assert secret not in caplog.text


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        [],
        {"pix": "nope"},
        {"pix": []},
        {"pix": [{"endToEndId": "E1", "valor": "1.00", "horario": "2026-01-01T00:00:00Z"}]},
    ],
)
def test_a_malformed_body_is_400(client, live, body):
    if isinstance(body, str):
        response = client.post(
            f"/v1/api-pix/webhook/{SECRET}/pix", data=body, content_type="application/json"
        )
    else:
        response = post_webhook(client, body)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_request"


def test_the_webhook_needs_no_api_key_and_no_csrf_token(app, client, live, psp, monkeypatch):
    monkeypatch.setitem(app.config, "WTF_CSRF_ENABLED", True)
    charge = live_charge(app, client, live)

    delivered(client, psp.webhook_body(psp.pay(txid_of(charge))["endToEndId"]))

    assert status(client, live, charge) == "paid"


# Reconciliation


def test_reconciliation_catches_a_webhook_that_never_came(app, client, live, psp, redis):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge))  # the PSP never calls us

    assert run_reconciliation(app, redis) == 1

    assert status(client, live, charge) == "paid"
    credited = balance(client, live)
    assert credited["available"] + credited["pending"] == AMOUNT

    delivered(client, psp.webhook_body(pix["endToEndId"]))  # late, after all
    assert run_reconciliation(app, redis) == 1  # the overlap lists it again

    assert balance(client, live) == credited
    assert charges.event_types(app, charge["id"]).count("charge.paid") == 1
    assert len(received_rows(app, charge)) == 1


def test_a_pix_the_job_could_not_apply_is_retried_and_holds_the_mark_just_before_it(
    app, client, live, psp, redis
):
    paid_charge, late_charge = live_charge(app, client, live), live_charge(app, client, live)
    charges.update_row(app, late_charge["id"], pix_expires_at=utcnow() - timedelta(hours=3))
    late_pix = psp.pay(txid_of(late_charge), at=utcnow() - timedelta(hours=2))
    psp.pay(txid_of(paid_charge))
    psp.failures.extend([None, 503])  # GET /pix answers; the late Pix's devolução fails

    assert run_reconciliation(app, redis) == 2

    assert status(client, live, paid_charge) == "paid"
    assert received_rows(app, late_charge) == []
    mark = datetime.fromisoformat(redis.get(api_pix_jobs.RECONCILED_UNTIL_KEY).decode())
    assert mark == datetime.fromisoformat(late_pix["horario"])
    assert run_reconciliation(app, redis) == 2
    (row,) = received_rows(app, late_charge)
    assert row.outcome is ReceivedPixOutcome.RETURNED_AFTER_EXPIRY
    mark = datetime.fromisoformat(redis.get(api_pix_jobs.RECONCILED_UNTIL_KEY).decode())
    assert mark > utcnow() - timedelta(minutes=1)


def test_a_pix_failing_past_the_retry_horizon_no_longer_holds_the_mark(
    app, client, live, psp, redis, monkeypatch, caplog
):
    charge = live_charge(app, client, live)
    pix = psp.pay(txid_of(charge), at=utcnow() - timedelta(hours=30))
    redis.set(api_pix_jobs.RECONCILED_UNTIL_KEY, (utcnow() - timedelta(hours=31)).isoformat())

    def broken(entries):
        raise RuntimeError("a bug applying this Pix")

    monkeypatch.setattr(api_pix_jobs.api_pix_inbound, "apply_received", broken)
    started = utcnow()

    assert run_reconciliation(app, redis) == 1

    mark = datetime.fromisoformat(redis.get(api_pix_jobs.RECONCILED_UNTIL_KEY).decode())
    assert mark >= started - api_pix_jobs.RETRY_HORIZON
    given_up = [record for record in caplog.records if hasattr(record, "end_to_end_ids")]
    assert given_up[0].end_to_end_ids == [pix["endToEndId"]]
    assert given_up[0].levelno == logging.ERROR
    spans = [
        datetime.fromisoformat(call.args["fim"]) - datetime.fromisoformat(call.args["inicio"])
        for call in psp.calls("GET", "/pix")
    ]
    assert len(spans) == 2 and max(spans) <= timedelta(hours=24)


def test_reconciliation_asks_from_its_last_run_less_an_overlap(app, client, live, psp, redis):
    run_reconciliation(app, redis)
    first = psp.calls("GET", "/pix")[-1].args
    run_reconciliation(app, redis)
    second = psp.calls("GET", "/pix")[-1].args

    assert first["fim"] > first["inicio"]
    span = datetime.fromisoformat(second["fim"]) - datetime.fromisoformat(second["inicio"])
    assert span < api_pix_jobs.FIRST_WINDOW
    assert span >= api_pix_jobs.OVERLAP


def test_reconciliation_is_skipped_without_a_live_provider(app, monkeypatch, redis):
    monkeypatch.setitem(app.config, "API_PIX_BASE_URL", "")
    assert run_reconciliation(app, redis) is None
