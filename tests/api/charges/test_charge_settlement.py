"""Settlement flows driven by the sandbox payer bank, with their events and ledger postings."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.cli import check_ledger
from app.extensions import db
from app.models import (
    KeyMode,
    LedgerEntry,
    LedgerPosting,
    ReceivedPix,
    Refund,
    RefundStatus,
    Wallet,
)
from app.models.base import utcnow
from app.pix.identifiers import END_TO_END_PATTERN
from app.services import ledger
from app.services.transactions import pix_payments
from tests.support import factories
from tests.support.charges import (
    CPF,
    OTHER_CPF,
    created,
    event_types,
    events,
    get,
    pay,
    raw,
    update_row,
)
from tests.support.http import assert_error, count_rows

LOCK = {"customer": {"name": "Ana Souza"}, "expected_payer_tax_id": CPF}


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _wallet(app, account_id) -> Wallet | None:
    with app.app_context():
        return db.session.scalar(sa.select(Wallet).where(Wallet.account_id == account_id))


def _ledger_is_clean(app) -> None:
    with app.app_context():
        assert ledger.check() == []
    result = app.test_cli_runner().invoke(check_ledger)
    assert result.exit_code == 0, result.output
    assert "ledger ok" in result.output


def _refunds(app, charge_id) -> list[Refund]:
    with app.app_context():
        return db.session.scalars(
            sa.select(Refund).where(Refund.transaction_id == raw(charge_id))
        ).all()


def test_exact_amount_pays_credits_the_wallet_net_of_fees_and_fires_events(
    app, client, account_id, api_key
):
    charge = created(client, api_key, amount=10_000)
    response = pay(client, api_key, charge["id"])
    assert response.status_code == 200
    paid = response.get_json()
    assert paid["status"] == "paid"
    assert END_TO_END_PATTERN.fullmatch(paid["settlement"]["end_to_end_id"])
    assert len(paid["settlement"]["end_to_end_id"]) == 32
    assert get(client, api_key, charge["id"]).get_json() == paid

    wallet = _wallet(app, account_id)
    # default schedule: provider 0.20 % (20) + platform 0.79 % (79) of R$ 100,00
    assert (wallet.mode, wallet.currency) == (KeyMode.TEST, "BRL")
    assert (wallet.pending, wallet.available, wallet.retained) == (10_000 - 99, 0, 0)
    _ledger_is_clean(app)
    with app.app_context():
        posting = db.session.scalar(sa.select(LedgerPosting))
        assert (posting.kind, posting.reference_id) == ("charge_settlement", raw(charge["id"]))
        amounts = db.session.scalars(
            sa.select(LedgerEntry.amount).where(LedgerEntry.posting_id == posting.id)
        ).all()
        assert sorted(amounts) == [-10_000, 20, 79, 9_901]

    assert {"charge.paid", "payment.completed"} <= set(event_types(app, charge["id"]))
    recorded = events(app, charge["id"])
    assert recorded["charge.paid"] == {"object": paid}
    completed = recorded["payment.completed"]
    assert completed["status"] == "PAID"
    assert completed["previousStatus"] == "WAITING_PAYMENT"
    assert (completed["paidWith"], completed["providerFee"], completed["platformFee"]) == (
        "PIX",
        20,
        79,
    )
    assert completed["netAmount"] == 9_901


def test_fees_follow_the_configured_schedule(app, client, account_id, api_key, monkeypatch):
    schedule = {
        "charges": {
            "PIX": {"provider": {"fixed": 10, "bps": 0}, "platform": {"fixed": 5, "bps": 100}}
        }
    }
    monkeypatch.setitem(app.config, "FEE_SCHEDULE", schedule)
    charge = created(client, api_key, amount=1_050)
    pay(client, api_key, charge["id"])
    # provider 10; platform 5 + 1 % of 1050 = 10.5 → 11 (half up)
    assert _wallet(app, account_id).pending == 1_050 - 10 - 16
    _ledger_is_clean(app)


def test_a_lower_amount_is_refused_and_the_charge_stays_pending(app, client, account_id, api_key):
    charge = created(client, api_key, amount=5_000)
    response = pay(client, api_key, charge["id"], amount=4_999)
    assert response.get_json()["status"] == "pending"
    assert response.get_json()["settlement"] == {}
    assert _wallet(app, account_id) is None
    with app.app_context():
        outcome = db.session.scalar(sa.select(ReceivedPix.outcome))
    assert outcome == "refused_amount"
    assert pay(client, api_key, charge["id"]).get_json()["status"] == "paid"
    _ledger_is_clean(app)


def test_payer_lock_mismatch_refunds_automatically_without_crediting(
    app, client, account_id, api_key
):
    charge = created(client, api_key, **LOCK)
    response = pay(client, api_key, charge["id"], payer_document=OTHER_CPF)
    assert response.get_json()["status"] == "refunded"
    assert response.get_json()["settlement"] == {}
    assert _wallet(app, account_id) is None
    (refund,) = _refunds(app, charge["id"])
    assert refund.automatic and refund.status is RefundStatus.REFUNDED
    assert refund.amount == charge["amount"]
    assert END_TO_END_PATTERN.fullmatch(refund.end_to_end_id)
    assert refund.return_id.startswith("D") and END_TO_END_PATTERN.fullmatch(refund.return_id)
    types = event_types(app, charge["id"])
    assert "payment.refunded" in types and "charge.paid" not in types
    assert OTHER_CPF not in response.get_data(as_text=True)
    _ledger_is_clean(app)


def test_payer_lock_with_matching_document_pays(app, client, account_id, api_key):
    charge = created(client, api_key, **LOCK)
    paid = pay(client, api_key, charge["id"], payer_document="529.982.247-25").get_json()
    assert paid["status"] == "paid"
    assert _wallet(app, account_id).pending > 0


def test_payer_lock_without_a_reported_document_holds_for_review(app, client, account_id, api_key):
    charge = created(client, api_key, **LOCK)
    held = pay(client, api_key, charge["id"], payer_document=None).get_json()
    assert held["status"] == "processing"
    assert held["settlement"] == {}
    assert _wallet(app, account_id) is None
    assert "charge.paid" not in event_types(app, charge["id"])


def test_held_payment_can_be_released_or_returned_by_review(app, client, account_id, api_key):
    released = created(client, api_key, **LOCK)
    returned = created(client, api_key, **LOCK)
    for charge in (released, returned):
        pay(client, api_key, charge["id"], payer_document=None)
    staff = factories.make_member(app)
    with app.app_context():
        pix_payments.release_held(raw(released["id"]), staff.user_id)
        pix_payments.return_held(raw(returned["id"]), staff.user_id)
        db.session.commit()
    assert get(client, api_key, released["id"]).get_json()["status"] == "paid"
    assert get(client, api_key, returned["id"]).get_json()["status"] == "refunded"
    assert _wallet(app, account_id).pending == released["amount"] - 25 - 98  # 0.20 %, 0.79 %
    assert len(_refunds(app, returned["id"])) == 1
    _ledger_is_clean(app)


def test_provider_failure_at_creation_gives_a_failed_charge(app, client, api_key):
    """R$ 503,00 makes the sandbox PSP refuse: no Pix code, status failed, metadata.failure."""
    charge = created(client, api_key, amount=50_300)
    assert charge["status"] == "failed"
    assert charge["pix"] is None
    failure = charge["metadata"]["failure"]
    assert set(failure) == {"reason", "providerErrorCode", "at"}
    assert failure["providerErrorCode"] == "sandbox_refused"
    assert sorted(event_types(app, charge["id"])) == ["charge.failed", "payment.failed"]


def test_a_payment_after_expiry_is_returned_not_credited(app, client, account_id, api_key):
    charge = created(client, api_key, expires_in=60)
    update_row(app, charge["id"], expires_at=utcnow() - timedelta(seconds=1))
    response = pay(client, api_key, charge["id"])
    assert response.get_json()["status"] == "expired"
    assert _wallet(app, account_id) is None
    (refund,) = _refunds(app, charge["id"])
    assert refund.automatic and refund.status is RefundStatus.REFUNDED
    _ledger_is_clean(app)


def test_a_repeated_notification_is_applied_once(app, client, account_id, api_key):
    charge = created(client, api_key)
    now = utcnow()
    incoming = pix_payments.IncomingPix(
        end_to_end_id="E99999999202611221200abcdefghijk",
        amount=charge["amount"],
        payer_document=CPF,
        payer_name="Ana",
        received_at=now,
    )
    with app.app_context():
        for _ in range(2):
            pix_payments.receive(raw(charge["id"]), incoming)
            db.session.commit()
    assert count_rows(app, LedgerPosting) == 1
    assert count_rows(app, ReceivedPix) == 1
    assert event_types(app, charge["id"]).count("charge.paid") == 1
    _ledger_is_clean(app)


def test_paying_a_paid_charge_again_returns_the_second_pix(app, client, account_id, api_key):
    charge = created(client, api_key)
    pay(client, api_key, charge["id"])
    again = pay(client, api_key, charge["id"])
    assert again.get_json()["status"] == "paid"
    assert count_rows(app, LedgerPosting) == 1
    assert len(_refunds(app, charge["id"])) == 1


def test_sandbox_payment_is_scoped_to_the_callers_test_charges(app, client, api_key):
    charge = created(client, api_key)
    stranger = factories.make_api_key(app, factories.make_account(app, "Other"))
    assert_error(pay(client, stranger, charge["id"]), 404, "not_found_error", "not_found")
    assert_error(pay(client, api_key, "ch_missing"), 404, "not_found_error", "not_found")
    for body, param in (
        ({"amount": 0}, "amount"),
        ({"amount": 10**20}, "amount"),
        ({"payer_document": "9" * 33}, "payer_document"),
        ({"payer_name": "x" * 141}, "payer_name"),
    ):
        response = pay(client, api_key, charge["id"], **body)
        assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)
    assert get(client, api_key, charge["id"]).get_json()["status"] == "pending"


@pytest.mark.parametrize("reported", ["not a document at all", "***.982.247-**", "52998224726"])
def test_a_payer_document_that_is_no_whole_valid_one_is_held_for_review(
    app, client, account_id, api_key, reported
):
    """Garbage, masked digits or a wrong check digit prove nothing about who paid: a person
    decides, rather than the payer's money being returned on a guess."""
    charge = created(client, api_key, **LOCK)
    held = pay(client, api_key, charge["id"], payer_document=reported).get_json()
    assert held["status"] == "processing"
    assert _wallet(app, account_id) is None


def test_ledger_check_fails_when_a_wallet_disagrees_with_its_entries(app, client, api_key):
    charge = created(client, api_key)
    pay(client, api_key, charge["id"])
    with app.app_context():
        db.session.execute(sa.update(Wallet).values(pending=Wallet.pending + 1))
        db.session.commit()
    result = app.test_cli_runner().invoke(check_ledger)
    assert result.exit_code == 1
    assert "pending" in result.output


@pytest.mark.postgres
def test_a_notification_delivered_twice_at_once_is_applied_once(app, client, api_key):
    """On PostgreSQL, two simultaneous deliveries of one Pix credit once and neither fails."""
    charge = created(client, api_key)
    incoming = pix_payments.IncomingPix(
        end_to_end_id="E99999999202611221200twinsAAAAA",
        amount=charge["amount"],
        payer_document=CPF,
        payer_name="Ana",
        received_at=utcnow(),
    )

    def deliver(_):
        with app.app_context():
            received = pix_payments.receive(raw(charge["id"]), incoming)
            db.session.commit()
            return received.outcome

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(deliver, range(2)))
    assert outcomes == ["credited", "credited"]
    assert count_rows(app, LedgerPosting) == 1
    assert event_types(app, charge["id"]).count("charge.paid") == 1
    _ledger_is_clean(app)
