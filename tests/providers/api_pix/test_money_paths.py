"""Where money goes back or comes in late on a live charge, against the fake PSP: automatic
returns (asked once, polled to their end, refused or past 90 days without raising), a Pix of
another amount, a Pix paid in time but heard of after expiry, and cancelling a held charge."""

import logging
import uuid
from datetime import datetime, timedelta

import pytest

from app.errors import Conflict, Unprocessable
from app.extensions import db
from app.models import ReceivedPixOutcome, RefundStatus
from app.models.base import utcnow
from app.providers.api_pix.mapping import devolucao_id_for, txid_for
from app.providers.base import ProviderError
from app.services import api_pix_inbound
from app.services.transactions import pix_payments
from tests.support import factories, refunds
from tests.support.charges import CPF, OTHER_CPF, created, events, get, raw, update_row
from tests.support.dashboard import post_form, sign_in

AMOUNT = 20_000
PAYER = {"cpf": CPF, "nome": "Ana Souza"}
LOCK = {"customer": {"name": "Ana Souza"}, "expected_payer_tax_id": CPF}


def live_charge(api, merchant, **overrides) -> dict:
    return created(api, merchant.api_key, amount=AMOUNT, **overrides)


def paid_at_psp(live, charge: dict, **pay) -> dict:
    return live.pay(txid_for(raw(charge["id"])), **pay)


def receive(app, charge: dict, pix: dict) -> ReceivedPixOutcome:
    """The Pix reaches us (as the webhook or reconciliation hands it over) and commits."""
    with app.app_context():
        entry = api_pix_inbound.read_listed(pix)
        received = pix_payments.receive(
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
        return received.outcome


def the_return(app, charge: dict):
    (refund,) = refunds.refund_rows(app, charge["id"])
    assert refund.automatic
    return refund


def devolucoes(live, pix: dict) -> list[dict]:
    return live.pix[pix["endToEndId"]]["devolucoes"]


def status(api, merchant, charge: dict) -> str:
    return get(api, merchant.api_key, charge["id"]).get_json()["status"]


def returned_on_mismatch(app, api, merchant, live, **pay) -> tuple[dict, dict]:
    """A payer-locked charge paid by someone else: returned automatically."""
    charge = live_charge(api, merchant, **LOCK)
    pix = paid_at_psp(live, charge, payer={"cpf": OTHER_CPF, "nome": "Bruno"}, **pay)
    assert receive(app, charge, pix) is ReceivedPixOutcome.RETURNED_PAYER_MISMATCH
    return charge, pix


def held_charge(app, api, merchant, live, at: datetime | None = None) -> tuple[dict, dict]:
    """A payer-locked charge paid without a payer document: held for review."""
    charge = live_charge(api, merchant, **LOCK)
    pix = paid_at_psp(live, charge, at=at)
    assert receive(app, charge, pix) is ReceivedPixOutcome.HELD_FOR_REVIEW
    return charge, pix


# 1. Automatic returns


def test_a_return_asked_again_after_a_lost_answer_is_the_same_devolucao(app, api, merchant, live):
    charge = live_charge(api, merchant, **LOCK)
    pix = paid_at_psp(live, charge, payer={"cpf": OTHER_CPF, "nome": "Bruno"})
    live.fail_next("timeout")  # the PSP books the devolução; its answer comes too late

    with pytest.raises(ProviderError):
        receive(app, charge, pix)  # rolled back: the webhook is delivered again
    assert receive(app, charge, pix) is ReceivedPixOutcome.RETURNED_PAYER_MISMATCH

    refund = the_return(app, charge)
    devolucao_id = devolucao_id_for(refund.id)
    assert refund.id == str(uuid.uuid5(pix_payments.AUTOMATIC_RETURN_NAMESPACE, pix["endToEndId"]))
    puts = live.calls("PUT", "/pix/")
    assert [put.path for put in puts] == [f"/pix/{pix['endToEndId']}/devolucao/{devolucao_id}"] * 2
    assert [d["id"] for d in devolucoes(live, pix)] == [devolucao_id]
    assert refund.provider_reference == pix["endToEndId"] + devolucao_id
    assert refund.status is RefundStatus.IN_PROGRESS
    assert status(api, merchant, charge) == "refunded"


def test_a_return_the_psp_refuses_is_failed_and_logged_not_raised(app, api, merchant, live, caplog):
    charge = live_charge(api, merchant, **LOCK)
    pix = paid_at_psp(live, charge, payer={"cpf": OTHER_CPF, "nome": "Bruno"})
    live.fail_next(400)

    with caplog.at_level(logging.ERROR, logger="app.services.transactions.pix_payments"):
        assert receive(app, charge, pix) is ReceivedPixOutcome.RETURNED_PAYER_MISMATCH

    refund = the_return(app, charge)
    assert refund.status is RefundStatus.FAILED
    assert refund.failure_reason.startswith("The provider refused the return")
    assert refund.completed_at is not None
    assert "payer has not been repaid" in caplog.text
    assert devolucoes(live, pix) == []


def test_an_automatic_return_past_90_days_is_failed_without_asking_the_psp(
    app, api, merchant, live
):
    charge, _ = returned_on_mismatch(app, api, merchant, live, at=utcnow() - timedelta(days=91))

    refund = the_return(app, charge)
    assert refund.status is RefundStatus.FAILED
    assert "90 days" in refund.failure_reason
    assert live.calls("PUT", "/pix/") == []


def test_staff_returning_a_pix_held_over_90_days_get_a_clear_error(app, api, merchant, live):
    """Choice: a person is told (409, nothing changes) rather than left with a FAILED return
    and a charge marked refunded while the money is still here; they may release it."""
    charge, _ = held_charge(app, api, merchant, live, at=utcnow() - timedelta(days=91))
    staff = factories.make_member(app)

    with app.app_context(), pytest.raises(Conflict) as refused:
        pix_payments.return_held(raw(charge["id"]), staff.user_id)

    assert refused.value.code == "refund_window_expired"
    assert "90 days" in refused.value.message
    assert live.calls("PUT", "/pix/") == []
    assert refunds.refund_rows(app, charge["id"]) == []
    assert refunds.transaction_row(app, charge["id"]).status == "PROCESSING"


def test_staff_returning_a_pix_the_psp_refuses_keep_it_held(app, api, merchant, live):
    """A refused devolução is no refund: staff are told (422) and the Pix stays held."""
    charge, _ = held_charge(app, api, merchant, live, at=utcnow() - timedelta(days=2))
    staff = factories.make_member(app)
    live.fail_next(400)

    with app.app_context(), pytest.raises(Unprocessable) as refused:
        pix_payments.return_held(raw(charge["id"]), staff.user_id)

    assert refused.value.code == "return_refused"
    assert "stays held" in refused.value.message
    assert refunds.transaction_row(app, charge["id"]).status == "PROCESSING"


def test_cancelling_a_held_charge_the_psp_refuses_to_return_is_refused(app, api, merchant, live):
    """The merchant's cancel answers 422 `return_refused`; the Pix stays held for review."""
    charge, _ = held_charge(app, api, merchant, live, at=utcnow() - timedelta(days=2))
    live.fail_next(400)

    response = api.post(f"/v1/payments/{charge['id']}/cancel", headers={"apikey": merchant.api_key})

    assert response.status_code == 422, response.get_json()
    assert response.get_json()["error"]["code"] == "return_refused"
    assert refunds.transaction_row(app, charge["id"]).status == "PROCESSING"
    assert refunds.refund_rows(app, charge["id"]) == []


def test_staff_returning_during_a_psp_outage_are_told_and_nothing_changes(app, api, merchant, live):
    charge, _ = held_charge(app, api, merchant, live, at=utcnow() - timedelta(days=2))
    sign_in(api, factories.make_staff(app))
    live.fail_next(503)

    response = post_form(
        api, "/dashboard/back-office", f"/dashboard/back-office/charges/{charge['id']}/return"
    )

    assert response.status_code == 303
    page = api.get("/dashboard/back-office").get_data(as_text=True)
    assert "The payment provider could not be reached; nothing changed." in page
    assert refunds.transaction_row(app, charge["id"]).status == "PROCESSING"
    assert refunds.refund_rows(app, charge["id"]) == []


# 2. The refund job polls automatic returns


@pytest.mark.parametrize(
    ("settled", "expected"), [("DEVOLVIDO", "REFUNDED"), ("NAO_REALIZADO", "FAILED")]
)
def test_the_refund_job_polls_an_automatic_return_whose_webhook_was_lost(
    app, api, merchant, live, settled, expected
):
    charge, pix = returned_on_mismatch(app, api, merchant, live)
    devolucao_id = devolucao_id_for(the_return(app, charge).id)
    live.settle_devolucao(pix["endToEndId"], devolucao_id, settled, "Conta encerrada")

    assert refunds.poll(app) == 1

    refund = the_return(app, charge)
    assert refund.status == expected
    assert refund.completed_at is not None
    if expected == "FAILED":
        assert "Conta encerrada" in refund.failure_reason
    assert refunds.available(api, merchant) == 0  # a return holds none of the merchant's money
    refunds.assert_ledger_clean(app)
    assert refunds.poll(app) == 0  # ended: not polled again


# 3. Another amount


def test_a_pix_of_another_amount_on_a_live_charge_is_returned(app, api, merchant, live):
    charge = live_charge(api, merchant)
    pix = paid_at_psp(live, charge, amount=AMOUNT - 1)

    assert receive(app, charge, pix) is ReceivedPixOutcome.REFUSED_AMOUNT

    assert status(api, merchant, charge) == "pending"
    refund = the_return(app, charge)
    assert refund.amount == AMOUNT - 1
    assert refund.status is RefundStatus.IN_PROGRESS
    (devolucao,) = devolucoes(live, pix)
    assert devolucao["valor"] == "199.99"


def test_a_pix_of_another_amount_in_test_mode_is_refused_by_the_bank(app, api, merchant):
    """The contract: the bank returns a Pix of another amount; the sandbox books no return."""
    test_key = factories.make_api_key(app, merchant.account_id)
    charge = created(api, test_key, amount=AMOUNT)
    with app.app_context():
        received = pix_payments.receive(
            raw(charge["id"]),
            pix_payments.IncomingPix(
                end_to_end_id="E" + "1" * 31,
                amount=AMOUNT - 1,
                payer_document=None,
                payer_name=None,
                received_at=utcnow(),
            ),
        )
        db.session.commit()
        assert received.outcome is ReceivedPixOutcome.REFUSED_AMOUNT

    assert refunds.refund_rows(app, charge["id"]) == []
    assert get(api, test_key, charge["id"]).get_json()["status"] == "pending"


# 4. Paid in time, heard of after expiry


def test_a_pix_paid_before_expiry_but_heard_of_after_it_is_credited(app, api, merchant, live):
    charge = live_charge(api, merchant)
    pix = paid_at_psp(live, charge, at=utcnow() - timedelta(minutes=10))
    deadline = utcnow() - timedelta(minutes=5)
    update_row(app, charge["id"], expires_at=deadline, pix_expires_at=deadline)
    assert status(api, merchant, charge) == "expired"  # the sweep ran before the webhook

    assert receive(app, charge, pix) is ReceivedPixOutcome.CREDITED

    paid = get(api, merchant.api_key, charge["id"]).get_json()
    assert paid["status"] == "paid"
    assert "failure" not in paid["metadata"]
    assert refunds.refund_rows(app, charge["id"]) == []
    assert {"charge.expired", "charge.paid"} <= set(events(app, charge["id"]))
    refunds.release(app)
    assert refunds.available(api, merchant) == AMOUNT


def test_a_pix_paid_after_expiry_is_still_returned(app, api, merchant, live):
    charge = live_charge(api, merchant)
    deadline = utcnow() - timedelta(minutes=5)
    update_row(app, charge["id"], expires_at=deadline, pix_expires_at=deadline)
    assert status(api, merchant, charge) == "expired"

    pix = paid_at_psp(live, charge)

    assert receive(app, charge, pix) is ReceivedPixOutcome.RETURNED_AFTER_EXPIRY
    assert status(api, merchant, charge) == "expired"
    assert the_return(app, charge).status is RefundStatus.IN_PROGRESS


# 5. Cancelling a held charge


def test_cancelling_a_held_live_charge_returns_the_pix_once(app, api, merchant, live):
    charge, pix = held_charge(app, api, merchant, live)

    cancelled = api.post(
        f"/v1/payments/{charge['id']}/cancel", headers={"apikey": merchant.api_key}
    )

    assert cancelled.status_code == 200, cancelled.get_json()
    assert cancelled.get_json()["status"] == "CANCELLED"
    refund = the_return(app, charge)
    assert refund.status is RefundStatus.IN_PROGRESS
    assert [d["id"] for d in devolucoes(live, pix)] == [devolucao_id_for(refund.id)]
    assert live.calls("PATCH", "/cob/") == []  # its cob is paid: nothing to withdraw


def test_cancelling_a_held_charge_past_90_days_is_refused_before_anything_moves(
    app, api, merchant, live
):
    charge, _ = held_charge(app, api, merchant, live, at=utcnow() - timedelta(days=91))

    refused = api.post(f"/v1/payments/{charge['id']}/cancel", headers={"apikey": merchant.api_key})

    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "refund_window_expired"
    assert live.calls("PUT", "/pix/") == []
    assert refunds.transaction_row(app, charge["id"]).status == "PROCESSING"
