"""Live charges with a due date (issue 24) are cobvs at the PSP: created with
`PUT /cobv/{txid}`, read back, withdrawn and reconciled through `/cobv`, their Pix credited
at the amount due on the day they are made; and the strict fake PSP's cobv refuses what the
standard refuses. Everything goes through our API with a live key, against the fake PSP.

Worked example (R$ 1.000,00 due Thursday 2026-12-10, valid 5 days after, as
tests/api/charges/test_due_charges.py): paid 2026-12-01 (9 days early), a discount of
9 x R$ 1,00 and the rebate of R$ 20,00 leave 97 100; paid 2026-12-15 (5 days late), the fine
of 2 % (2 000) and interest of 1 % a month x 5/30 (166,67 → 167), less the rebate, come to
100 167.
"""

from datetime import date, datetime, timedelta

import pytest
import sqlalchemy as sa
import time_machine

from app.business_days import SAO_PAULO, sao_paulo_day
from app.extensions import db
from app.jobs.api_pix import OVERLAP, cobv_spans
from app.models import ReceivedPix, Transaction
from app.models.base import utcnow
from app.pix.due import DueTerms
from app.providers.api_pix import ApiPixClient, ApiPixRefused, ApiPixSettings
from app.providers.api_pix.mapping import (
    COB,
    COBV,
    REMOVED_BY_PSP,
    REMOVED_BY_RECEIVER,
    cob_body,
    cob_kind,
    transaction_id_of,
    txid_for,
)
from tests.providers.api_pix.test_inbound import (  # the live merchant and its helpers
    balance,
    client,
    delivered,
    live,
    run_reconciliation,
    status,
)
from tests.support import charges
from tests.support.charges import CPF, created
from tests.support.fake_api_pix import CLIENT_TIMEOUT_SECONDS, RECEIVER_KEY
from tests.support.http import assert_error

__all__ = ["client", "live"]  # fixtures

DUE = {
    "date": "2026-12-10",
    "days_valid_after": 5,
    "fine": {"type": "percent", "value": 2},
    "interest": {"type": "percent_month", "value": 1},
    "discounts": {"type": "fixed_day", "value": 100},
    "rebate": {"type": "fixed", "value": 2000},
}
CUSTOMER = {"name": "Ana Souza", "document": CPF}
PAYER = {"cpf": CPF, "nome": "Ana Souza"}
TRANSACTION_ID = "0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d"


def on(day: int, hour: int = 12):
    """December 2026 in São Paulo, the clock stopped (the fake PSP's too: same process)."""
    return time_machine.travel(datetime(2026, 12, day, hour, 0, tzinfo=SAO_PAULO), tick=False)


def due_charge(client, live, due: dict = DUE, **body) -> dict:
    return created(client, live.api_key, amount=100_000, customer=CUSTOMER, due=due, **body)


def created_on_the_1st(client, live, **body) -> dict:
    with on(1, hour=10):
        return due_charge(client, live, **body)


def txid_of(charge: dict) -> str:
    return charge["pix"]["txid"]


def charge_row(app, charge: dict) -> Transaction:
    with app.app_context():
        row = db.session.get(Transaction, charges.raw(charge["id"]))
        db.session.expunge(row)
        return row


def failure_of(charge: dict) -> dict:
    assert charge["status"] == "failed", charge
    return charge["metadata"]["failure"]


# Creation


def test_a_charge_with_a_due_date_is_a_cobv_at_the_psp(client, live, psp):
    charge = created_on_the_1st(client, live)

    txid = txid_of(charge)
    assert txid == txid_for(charges.raw(charge["id"]), COBV)
    assert psp.calls("PUT", "/cob/") == []
    (put,) = psp.calls("PUT", "/cobv/")
    assert put.path == f"/cobv/{txid}"
    assert put.body == {
        "calendario": {"dataDeVencimento": "2026-12-10", "validadeAposVencimento": 5},
        "valor": {
            "original": "1000.00",
            "multa": {"modalidade": 2, "valorPerc": "2.00"},
            "juros": {"modalidade": 3, "valorPerc": "1.00"},
            "desconto": {"modalidade": 3, "valorPerc": "1.00"},
            "abatimento": {"modalidade": 1, "valorPerc": "20.00"},
        },
        "chave": RECEIVER_KEY,
        "devedor": {"cpf": CPF, "nome": "Ana Souza"},
        "solicitacaoPagador": "Pedido 42",
    }
    cobv = psp.cobs[txid]
    assert cobv["loc"]["tipoCob"] == "cobv"
    assert charge["status"] == "pending"
    assert charge["pix"]["br_code"] == cobv["pixCopiaECola"]
    assert charge["pix"]["expires_at"].startswith("2026-12-16T03:00:00")  # midnight, UTC-3


@pytest.mark.parametrize(
    ("terms", "valor"),
    [
        (
            {
                "fine": {"type": "fixed", "value": 1500},
                "interest": {"type": "fixed_day", "value": 50},
                "rebate": {"type": "percent", "value": 1.5},
            },
            {
                "multa": {"modalidade": 1, "valorPerc": "15.00"},
                "juros": {"modalidade": 1, "valorPerc": "0.50"},
                "abatimento": {"modalidade": 2, "valorPerc": "1.50"},
            },
        ),
        (
            {
                "interest": {"type": "percent_day", "value": 0.25},
                "discounts": [
                    {"until": "2026-12-05", "type": "fixed", "value": 5000},
                    {"until": "2026-12-10", "type": "fixed", "value": 2500},
                ],
            },
            {
                "juros": {"modalidade": 2, "valorPerc": "0.25"},
                "desconto": {
                    "modalidade": 1,
                    "descontoDataFixa": [
                        {"data": "2026-12-05", "valorPerc": "50.00"},
                        {"data": "2026-12-10", "valorPerc": "25.00"},
                    ],
                },
            },
        ),
        (
            {
                "interest": {"type": "percent_year", "value": 12.5},
                "discounts": [{"until": "2026-12-03", "type": "percent", "value": 5}],
            },
            {
                "juros": {"modalidade": 4, "valorPerc": "12.50"},
                "desconto": {
                    "modalidade": 2,
                    "descontoDataFixa": [{"data": "2026-12-03", "valorPerc": "5.00"}],
                },
            },
        ),
        (
            {"discounts": {"type": "percent_day", "value": 0.5}},
            {"desconto": {"modalidade": 5, "valorPerc": "0.50"}},
        ),
        ({}, {}),
    ],
    ids=["fixed-and-percent", "dated-fixed", "dated-percent", "daily-percent", "bare"],
)
def test_each_term_becomes_its_modalidade(client, live, psp, terms, valor):
    charge = created_on_the_1st(client, live, due={"date": "2026-12-10", **terms})

    assert charge["status"] == "pending"
    (put,) = psp.calls("PUT", "/cobv/")
    assert put.body["valor"] == {"original": "1000.00", **valor}
    assert put.body["calendario"] == {"dataDeVencimento": "2026-12-10", "validadeAposVencimento": 0}


def test_dated_discounts_mixing_fixed_and_percent_are_refused_before_the_psp(client, live, psp):
    """The standard gives every dated tier one modalidade: a 400, and no call."""
    mixed = [
        {"until": "2026-12-05", "type": "fixed", "value": 5000},
        {"until": "2026-12-10", "type": "percent", "value": 2},
    ]

    with on(1, hour=10):
        response = charges.create(
            client, live.api_key, amount=100_000, customer=CUSTOMER, due={**DUE, "discounts": mixed}
        )

    assert_error(
        response, 400, "invalid_request_error", "invalid_request", param="due.discounts.1.type"
    )
    assert psp.calls("PUT", "/cobv/") == []


@pytest.mark.parametrize("kind", [COB, COBV])
def test_a_psp_problem_fails_a_due_charge_as_it_fails_a_cob(
    app, monkeypatch, client, live, psp, kind
):
    monkeypatch.setitem(app.config, "API_PIX_RECEIVER_PIX_KEY", "ana@example.com")
    with on(1):
        if kind == COBV:
            charge = due_charge(client, live)
        else:
            charge = created(client, live.api_key, customer=CUSTOMER)

    failure = failure_of(charge)
    tag = {COB: "CobOperacaoInvalida", COBV: "CobVOperacaoInvalida"}[kind]
    assert failure["providerErrorCode"] == tag
    assert "A chave não pertence ao recebedor." in failure["reason"]
    assert f"{kind}.chave: A chave não pertence ao recebedor." in failure["reason"]
    assert charge["pix"] is None


def test_a_psp_outage_is_503_for_a_due_charge_too(app, client, live, psp):
    psp.fail_next(503)
    psp.fail_next(503)

    with on(1):
        answer = charges.create(client, live.api_key, customer=CUSTOMER, due=DUE)

    assert answer.status_code == 503
    assert answer.get_json()["error"]["code"] == "service_unavailable"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Transaction)) == 0


def test_a_lost_answer_is_read_back_from_the_cobv(app, monkeypatch, client, live, psp):
    monkeypatch.setitem(app.config, "API_PIX_TIMEOUT_SECONDS", CLIENT_TIMEOUT_SECONDS)
    psp.fail_next("timeout")
    psp.fail_next(409)  # a PSP that refuses a second PUT of a txid it holds

    charge = created_on_the_1st(client, live)

    txid = txid_of(charge)
    assert [(call.method, call.path) for call in psp.requests if call.path != "/oauth/token"] == [
        ("PUT", f"/cobv/{txid}"),
        ("PUT", f"/cobv/{txid}"),
        ("GET", f"/cobv/{txid}"),
    ]
    assert charge["status"] == "pending"
    assert charge["pix"]["br_code"] == psp.cobs[txid]["pixCopiaECola"]


# Paying, reading back, withdrawing


def test_a_late_pix_from_the_webhook_is_credited_with_fine_and_interest(app, client, live, psp):
    charge = created_on_the_1st(client, live)
    txid = txid_of(charge)

    with on(15):
        due_date_amount = psp.pay(txid, amount=98_000, payer=PAYER)  # not what the 15th asks
        delivered(client, psp.webhook_body(due_date_amount["endToEndId"]))
        assert status(client, live, charge) == "pending"
        late = psp.pay(txid, amount=100_167, payer=PAYER)
        delivered(client, psp.webhook_body(late["endToEndId"]))
        paid = charges.get(client, live.api_key, charge["id"]).get_json()

    assert paid["status"] == "paid"
    assert paid["amount"] == 100_167
    assert paid["due"]["amount_due"] == {
        "date": "2026-12-15",
        "original": 100_000,
        "rebate": 2_000,
        "discount": 0,
        "fine": 2_000,
        "interest": 167,
        "total": 100_167,
    }
    credited = balance(client, live)
    assert credited["available"] + credited["pending"] == 100_167
    with app.app_context():
        outcomes = db.session.scalars(sa.select(ReceivedPix.outcome)).all()
    assert sorted(outcomes) == ["credited", "refused_amount"]
    (returned,) = psp.calls("PUT", f"/pix/{due_date_amount['endToEndId']}/devolucao/")
    assert returned.body["valor"] == "980.00"  # the wrong amount went back


def test_reconciliation_credits_an_early_pix_with_its_discount(app, client, live, psp, redis):
    charge = created_on_the_1st(client, live)
    with on(1, hour=15):
        psp.pay(txid_of(charge), amount=97_100, payer=PAYER)  # no webhook came
        run_reconciliation(app, redis)
        paid = charges.get(client, live.api_key, charge["id"]).get_json()

    assert paid["status"] == "paid"
    assert paid["amount"] == 97_100
    assert charge_row(app, charge).due_original_amount == 100_000


def test_provider_status_reads_the_cobv(client, live, psp):
    charge = created_on_the_1st(client, live)

    answer = client.get(
        f"/v1/payments/{charge['id']}/provider-status", headers={"apikey": live.api_key}
    ).get_json()

    assert psp.calls("GET", "/cob/") == []
    assert [call.path for call in psp.calls("GET", "/cobv/")] == [f"/cobv/{txid_of(charge)}"]
    assert answer["providerTransactionId"] == txid_of(charge)
    assert answer["providerStatus"] == "ATIVA"
    assert answer["rawResponse"]["calendario"]["dataDeVencimento"] == "2026-12-10"


def test_cancel_removes_the_cobv(client, live, psp):
    charge = created_on_the_1st(client, live)

    with on(2):
        cancelled = client.post(
            f"/v1/payments/{charge['id']}/cancel", headers={"apikey": live.api_key}
        )

    assert cancelled.status_code == 200, cancelled.get_json()
    assert cancelled.get_json()["status"] == "CANCELLED"
    assert psp.calls("PATCH", "/cob/") == []
    (patch,) = psp.calls("PATCH", "/cobv/")
    assert patch.path == f"/cobv/{txid_of(charge)}"
    assert patch.body == {"status": REMOVED_BY_RECEIVER}
    assert psp.cobs[txid_of(charge)]["status"] == REMOVED_BY_RECEIVER


def test_reconciliation_cancels_a_charge_whose_cobv_the_psp_removed(app, client, live, psp, redis):
    due_on = sao_paulo_day(utcnow()) + timedelta(days=30)
    charge = due_charge(client, live, due={"date": due_on.isoformat()})
    immediate = created(client, live.api_key, customer=CUSTOMER)
    psp.remove_cob(txid_of(charge))

    run_reconciliation(app, redis)

    assert status(client, live, charge) == "cancelled"
    assert status(client, live, immediate) == "pending"
    (listed,) = psp.calls("GET", "/cobv")
    assert listed.args["status"] == REMOVED_BY_PSP
    created_at = charge_row(app, charge).created_at
    assert datetime.fromisoformat(listed.args["inicio"]) <= created_at


def test_without_an_awaited_due_charge_no_cobv_is_listed(app, client, live, psp, redis):
    created(client, live.api_key, customer=CUSTOMER)

    run_reconciliation(app, redis)

    assert {call.path for call in psp.calls("GET", "/cob")} == {"/cob"}  # never /cobv


# The txid says the kind


def test_a_cobv_txid_is_the_transaction_s_and_says_its_kind():
    cob, cobv = txid_for(TRANSACTION_ID), txid_for(TRANSACTION_ID, COBV)

    assert cobv == cob + "v" and len(cobv) == 33
    assert (cob_kind(cob), cob_kind(cobv)) == (COB, COBV)
    assert transaction_id_of(cob) == transaction_id_of(cobv) == TRANSACTION_ID
    assert transaction_id_of("pedido42") is None


def test_a_cobv_body_needs_its_payer():
    terms = DueTerms(date=date(2026, 12, 10))

    with pytest.raises(ValueError, match="payer's name and CPF or CNPJ"):
        cob_body(1000, 0, None, None, receiver_key=RECEIVER_KEY, terms=terms)


# The strict fake PSP's cobv


@pytest.fixture
def psp_client(psp) -> ApiPixClient:
    return ApiPixClient(ApiPixSettings.from_config(psp.config(API_PIX_TIMEOUT_SECONDS="2")))


def cobv_body(**changes) -> dict:
    body = {
        "calendario": {"dataDeVencimento": "2026-12-10", "validadeAposVencimento": 5},
        "devedor": {"cpf": CPF, "nome": "Ana Souza"},
        "valor": {"original": "100.00"},
        "chave": RECEIVER_KEY,
    }
    for name, value in changes.items():
        body[name] = {**body[name], **value} if isinstance(value, dict) else value
    return body


COBV_TXID = txid_for(TRANSACTION_ID, COBV)


@pytest.mark.parametrize(
    ("body", "broken"),
    [
        (
            cobv_body(calendario={"dataDeVencimento": "2026-11-30"}),
            {"cobv.calendario.dataDeVencimento"},
        ),
        (
            cobv_body(calendario={"validadeAposVencimento": -1}),
            {"cobv.calendario.validadeAposVencimento"},
        ),
        (cobv_body(valor={"original": "0.00"}), {"cobv.valor.original"}),
        (cobv_body(chave="ana@example.com"), {"cobv.chave"}),
        (
            cobv_body(
                valor={
                    "desconto": {
                        "modalidade": 1,
                        "descontoDataFixa": [{"data": "2026-12-11", "valorPerc": "1.00"}],
                    }
                }
            ),
            {"cobv.valor.desconto.descontoDataFixa"},
        ),
        (
            cobv_body(valor={"desconto": {"modalidade": 2, "valorPerc": "1.00"}}),
            {"cobv.valor.desconto.valorPerc", "cobv.valor.desconto.descontoDataFixa"},
        ),
        (
            cobv_body(
                valor={
                    "desconto": {
                        "modalidade": 3,
                        "descontoDataFixa": [{"data": "2026-12-05", "valorPerc": "1.00"}],
                    }
                }
            ),
            {"cobv.valor.desconto.valorPerc", "cobv.valor.desconto.descontoDataFixa"},
        ),
        (
            cobv_body(valor={"desconto": {"modalidade": 3, "valorPerc": "100.00"}}),
            {"cobv.valor.desconto"},
        ),
        (
            cobv_body(valor={"abatimento": {"modalidade": 2, "valorPerc": "100.00"}}),
            {"cobv.valor.abatimento"},
        ),
    ],
    ids=[
        "due-before-creation",
        "negative-validity",
        "zero-original",
        "not-the-receiver-s-key",
        "discount-after-due-date",
        "dated-modalidade-with-valorPerc",
        "daily-modalidade-with-dates",
        "whole-discount",
        "whole-rebate",
    ],
)
def test_the_fake_refuses_what_the_standard_lists_for_cobv(psp, psp_client, body, broken):
    with on(1), pytest.raises(ApiPixRefused) as refused:
        psp_client.put_cob(COBV_TXID, body, COBV)

    assert (refused.value.status, refused.value.code) == (400, "CobVOperacaoInvalida")
    assert {field for field, _ in refused.value.violations} == broken
    assert psp.cobs == {}
    assert psp.violations == []  # the standard's schema allows each: the rules are semantic


def test_the_fake_refuses_and_records_a_cobv_without_devedor(psp, psp_client):
    body = cobv_body()
    del body["devedor"]

    with on(1), pytest.raises(ApiPixRefused) as refused:
        psp_client.put_cob(COBV_TXID, body, COBV)

    assert refused.value.code == "CobVOperacaoInvalida"
    assert [(v.what, v.method) for v in psp.violations] == [("request", "PUT")]
    assert "'devedor' is a required property" in psp.violations[0].message
    psp.violations.clear()  # seen; the fixture's teardown would fail the test otherwise


def test_the_fake_keeps_cobs_and_cobvs_apart(psp, psp_client):
    with on(1):
        cobv = psp_client.put_cob(COBV_TXID, cobv_body(), COBV)
        with pytest.raises(ApiPixRefused) as not_a_cob:
            psp_client.get_cob(COBV_TXID)
        with pytest.raises(ApiPixRefused) as not_a_cobv:
            psp_client.get_cob(txid_for(TRANSACTION_ID), COBV)

    assert cobv["status"] == "ATIVA" and cobv["recebedor"]["cnpj"]
    assert "expiracao" not in cobv["calendario"]
    assert (not_a_cob.value.status, not_a_cob.value.code) == (404, "CobNaoEncontrado")
    assert (not_a_cobv.value.status, not_a_cobv.value.code) == (404, "CobVNaoEncontrada")


def test_the_fake_removes_a_cobv_once_and_alone(psp, psp_client):
    removal = {"status": REMOVED_BY_RECEIVER}
    with on(1):
        psp_client.put_cob(COBV_TXID, cobv_body(), COBV)
        with pytest.raises(ApiPixRefused, match="sem outras alterações"):
            psp_client.patch_cob(COBV_TXID, {**removal, "valor": {"original": "1.00"}}, COBV)
        removed = psp_client.patch_cob(COBV_TXID, removal, COBV)
        with pytest.raises(ApiPixRefused, match="não está ATIVA"):
            psp_client.patch_cob(COBV_TXID, removal, COBV)

    assert (removed["status"], removed["revisao"]) == (REMOVED_BY_RECEIVER, 1)


def test_the_fake_revises_an_active_cobv(psp, psp_client):
    with on(1):
        psp_client.put_cob(COBV_TXID, cobv_body(), COBV)
        revised = psp_client.patch_cob(
            COBV_TXID, {"calendario": {"dataDeVencimento": "2026-12-20"}}, COBV
        )

    assert revised["revisao"] == 1
    assert revised["calendario"]["dataDeVencimento"] == "2026-12-20"
    assert revised["calendario"]["validadeAposVencimento"] == 5  # only what it names changes
    assert revised["valor"] == {"original": "100.00"}


def test_cobv_removals_are_listed_around_each_awaited_charge_only():
    """Two charges five minutes apart share one span; one a year older gets its own, and
    the year between is never listed."""
    first = datetime(2025, 12, 1, 10, tzinfo=SAO_PAULO)
    later = datetime(2026, 12, 1, 10, tzinfo=SAO_PAULO)
    spans = cobv_spans([first, later, later + timedelta(minutes=5)])

    assert spans == [
        (first - OVERLAP, first + OVERLAP),
        (later - OVERLAP, later + timedelta(minutes=5) + OVERLAP),
    ]
