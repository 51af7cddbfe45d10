"""Cobs the PSP removed on its own (`REMOVIDA_PELO_PSP`), found by the reconciliation job
(`GET /cob?status=REMOVIDA_PELO_PSP`) and applied to our live charges, against the fake PSP."""

import logging
from datetime import datetime, timedelta

import sqlalchemy as sa
from werkzeug.wrappers import Request

from app.extensions import db
from app.jobs import api_pix as api_pix_jobs
from app.models import PspNotice, PspNoticeKind, TransactionStatus
from app.models.base import utcnow
from app.providers.api_pix import client as client_module
from app.providers.api_pix.mapping import COB_STATUS, REMOVED_BY_PSP
from app.services.transactions.charges import MAX_EXPIRES_IN
from tests.providers.api_pix.test_inbound import (  # the live merchant and its helpers
    client,
    live,
    live_charge,
    run_reconciliation,
    status,
    txid_of,
)
from tests.support import charges

__all__ = ["client", "live"]  # fixtures


def test_every_cob_status_lands_on_ours():
    assert COB_STATUS == {
        "ATIVA": TransactionStatus.WAITING_PAYMENT,
        "CONCLUIDA": TransactionStatus.PAID,
        "REMOVIDA_PELO_USUARIO_RECEBEDOR": TransactionStatus.CANCELLED,
        "REMOVIDA_PELO_PSP": TransactionStatus.CANCELLED,
    }


def test_a_cob_the_psp_removed_cancels_the_pending_charge_once(app, client, live, psp, redis):
    removed, untouched = live_charge(app, client, live), live_charge(app, client, live)
    psp.remove_cob(txid_of(removed))

    run_reconciliation(app, redis)

    assert status(client, live, removed) == "cancelled"
    assert status(client, live, untouched) == "pending"
    body = charges.get(client, live.api_key, removed["id"]).get_json()
    assert body["metadata"]["failure"]["providerErrorCode"] == "canceled"
    assert REMOVED_BY_PSP in body["metadata"]["failure"]["reason"]
    events = charges.event_types(app, removed["id"])
    assert events.count("charge.failed") == 1 and events.count("payment.failed") == 1

    run_reconciliation(app, redis)  # the removed cob is listed again: nothing more happens

    assert charges.event_types(app, removed["id"]) == events
    assert {call.args["status"] for call in psp.calls("GET", "/cob")} == {REMOVED_BY_PSP}


def test_a_paid_charge_whose_cob_the_psp_removed_is_left_alone(
    app, client, live, psp, redis, caplog
):
    charge = live_charge(app, client, live)
    psp.pay(txid_of(charge))
    psp.remove_cob(txid_of(charge))  # a PSP's bookkeeping error, say

    with caplog.at_level(logging.INFO, logger="app.services.api_pix_inbound"):
        run_reconciliation(app, redis)

    assert status(client, live, charge) == "paid"
    assert "charge.failed" not in charges.event_types(app, charge["id"])
    assert any("left alone" in record.getMessage() for record in caplog.records)


def test_a_removed_cob_of_an_overdue_charge_expires_it(app, client, live, psp, redis):
    charge = live_charge(app, client, live)
    charges.update_row(app, charge["id"], expires_at=utcnow() - timedelta(minutes=1))
    psp.remove_cob(txid_of(charge))

    run_reconciliation(app, redis)

    assert status(client, live, charge) == "expired"
    assert "charge.failed" not in charges.event_types(app, charge["id"])


def test_removed_cobs_are_read_page_by_page_over_the_longest_charge_life(
    app, client, live, psp, redis, monkeypatch
):
    monkeypatch.setattr(client_module, "PAGE_SIZE", 1)
    removed = [live_charge(app, client, live) for _ in range(3)]
    for charge in removed:
        psp.remove_cob(txid_of(charge))

    run_reconciliation(app, redis)

    assert [status(client, live, charge) for charge in removed] == ["cancelled"] * 3
    older, recent = psp.calls("GET", "/cob")[:1], psp.calls("GET", "/cob")[1:]
    assert [call.args["paginacao.paginaAtual"] for call in older] == ["0"]  # empty
    assert [call.args["paginacao.paginaAtual"] for call in recent] == ["0", "1", "2"]
    start = datetime.fromisoformat(older[0].args["inicio"])
    end = datetime.fromisoformat(recent[-1].args["fim"])
    assert end - start == timedelta(seconds=MAX_EXPIRES_IN) + api_pix_jobs.OVERLAP


def ignoring_the_status_filter(psp) -> None:
    """The fake PSP lists every cob when asked for removed ones, as a careless PSP might."""
    unfiltered = psp._list_cobs

    def listed(body, request, **route):
        args = {name: value for name, value in request.args.items() if name != "status"}
        return unfiltered(body, Request.from_values(query_string=args), **route)

    psp._list_cobs = listed


def test_a_cob_the_psp_lists_though_not_removed_is_ignored(app, client, live, psp, redis):
    charge = live_charge(app, client, live)
    ignoring_the_status_filter(psp)

    run_reconciliation(app, redis)

    assert status(client, live, charge) == "pending"


def test_a_cob_status_of_a_newer_release_is_a_notice_and_decides_nothing(
    app, client, live, psp, redis
):
    charge = live_charge(app, client, live)
    psp.allow_future_enum_value("REMOVIDA_PELO_SISTEMA")
    psp.cobs[txid_of(charge)]["status"] = "REMOVIDA_PELO_SISTEMA"
    ignoring_the_status_filter(psp)

    run_reconciliation(app, redis)
    run_reconciliation(app, redis)

    assert status(client, live, charge) == "pending"
    with app.app_context():
        (notice,) = db.session.scalars(sa.select(PspNotice)).all()
        assert notice.kind is PspNoticeKind.UNKNOWN_VALUE
        assert notice.subject == "cob.status=REMOVIDA_PELO_SISTEMA"
        assert notice.occurrences == 2


def test_the_job_lists_no_cobs_without_a_live_provider(app, monkeypatch, psp, redis):
    monkeypatch.setitem(app.config, "API_PIX_BASE_URL", "")

    assert run_reconciliation(app, redis) is None
    assert psp.calls("GET", "/cob") == []
