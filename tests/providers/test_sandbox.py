"""The sandbox provider: real dynamic BR Codes, no outside calls, Pix ids in the right shape."""

from datetime import UTC, datetime

import pytest

from app.extensions import db
from app.models import Transaction
from app.pix import brcode, locations
from app.pix.identifiers import END_TO_END_PATTERN, TXID_PATTERN
from app.providers.base import (
    PaymentStatusRequest,
    PayoutRejected,
    PayoutRequest,
    PixChargeRequest,
    ProviderError,
)
from app.providers.sandbox import FAILING_AMOUNT, SandboxProvider
from tests.support import factories
from tests.support.charges import created, pay


def _request(amount: int = 2_500) -> PixChargeRequest:
    return PixChargeRequest(
        reference="ref",
        amount=amount,
        expires_in=300,
        merchant_name="Açaí & Cia Comércio de Alimentos",
        merchant_city="São José dos Campos",
    )


def test_creates_a_dynamic_code_whose_location_this_service_serves():
    provider = SandboxProvider("https://pay.acme.example/base/")
    charge = provider.create_charge(_request())
    code = brcode.parse(charge.br_code)
    compact_id = locations.compact_id(charge.location_id)
    assert code.location == f"pay.acme.example/base/v1/qr/{compact_id}"
    assert code.txid == "***" and charge.txid not in charge.br_code
    assert TXID_PATTERN.fullmatch(charge.txid)
    assert code.merchant_name == "Acai & Cia Comercio de Al"
    assert code.merchant_city == "Sao Jose dos Ca"
    assert code.amount_cents == 2_500


def test_the_failing_amount_is_a_provider_error():
    with pytest.raises(ProviderError) as failure:
        SandboxProvider("http://localhost").create_charge(_request(FAILING_AMOUNT))
    assert failure.value.code == "sandbox_refused"


def test_a_location_too_long_for_a_br_code_is_a_provider_error():
    provider = SandboxProvider("https://" + "a" * 60 + ".example")
    with pytest.raises(ProviderError) as failure:
        provider.create_charge(_request())
    assert failure.value.code == "invalid_brcode"


def test_returns_carry_a_return_id():
    provider = SandboxProvider("http://localhost")
    returned = provider.return_pix("E99999999202611221200abcdefghijk", 100, "refund-1")
    assert returned.return_id.startswith("D") and END_TO_END_PATTERN.fullmatch(returned.return_id)
    assert returned.status == "REFUNDED"


def test_payouts_settle_with_a_stable_reference_or_are_rejected():
    """The same payout id always gets the same answer, so a retry never pays twice."""
    provider = SandboxProvider("http://localhost")
    at = datetime(2026, 11, 22, 12, 30, tzinfo=UTC)
    pix = PayoutRequest("w1", "PIX", 100, "BRL", {"pixKey": "a@b.co"}, at)
    first = provider.payout(pix)
    assert END_TO_END_PATTERN.fullmatch(first.reference)
    assert first.reference.startswith("E99999999202611221230")
    assert provider.payout(pix) == first
    assert provider.payout(PayoutRequest("w2", "PIX", 100, "BRL", {}, at)) != first
    crypto = provider.payout(PayoutRequest("w3", "CRYPTO", 100, "USDT", {}, at))
    assert crypto.reference.startswith("0x") and len(crypto.reference) == 66
    with pytest.raises(PayoutRejected) as failure:
        provider.payout(PayoutRequest("w4", "TED", FAILING_AMOUNT, "BRL", {}, at))
    assert failure.value.code == "sandbox_rejected"


def _status_request(txid: str) -> PaymentStatusRequest:
    """What the payments service passes: the charge record it asks about."""
    charge = db.session.scalar(db.select(Transaction).where(Transaction.pix_txid == txid))
    return PaymentStatusRequest("PIX", txid, charge.status, charge.amount, charge.currency)


def test_pix_status_reads_the_charge_in_the_api_pix_vocabulary(app, client):
    """The sandbox's books are the charge records: ATIVA, then CONCLUIDA once paid."""
    key = factories.make_api_key(app, factories.make_account(app))
    charge = created(client, key)
    provider = SandboxProvider("http://localhost")
    with app.app_context():
        assert provider.payment_status(_status_request(charge["pix"]["txid"])).status == "ATIVA"
    pay(client, key, charge["id"])
    with app.app_context():
        status = provider.payment_status(_status_request(charge["pix"]["txid"])).status
        assert status == "CONCLUIDA"
