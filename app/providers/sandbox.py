"""The sandbox provider for test-mode keys: real, valid instructions, no call outside.

It issues dynamic Pix codes whose location is served by this service
(`/v1/qr/<id>`, answering the charge's payload), boletos with correct FEBRABAN
check digits, Multibanco references with SIBS check digits, a card page on this service and
BSC deposit addresses. Payments are simulated with `POST /v1/sandbox/charges/{id}/pay`,
`POST /v1/sandbox/payments/{id}/pay` or the checkout pages. Payouts settle at once; refunds
complete on the next poll. One amount fails on purpose so integrations can test the failure
paths: 503,00 (`FAILING_AMOUNT`) makes creation fail, payouts be rejected and refunds fail.

It keeps no books of its own and reads none of ours: the service's record is its state, passed
in with each status question (`PaymentStatusRequest`, `RefundStatusRequest`).
"""

import hashlib
import string
import uuid
from datetime import UTC, datetime, timedelta

from app.business_days import SAO_PAULO, is_business_day
from app.formats.locations import cob_status
from app.formats.money import DECIMAL_POINT, format_money
from app.methods import boleto, multibanco
from app.models import RefundStatus
from app.models.base import utcnow
from app.pix import brcode, due, locations
from app.pix.identifiers import new_return_id, new_txid
from app.providers.base import (
    PaymentInstructions,
    PaymentProvider,
    PaymentRequest,
    PaymentStatusRequest,
    PayoutRejected,
    PayoutRequest,
    PayoutSent,
    PixCharge,
    PixChargeRequest,
    PixReturn,
    ProviderRefused,
    ProviderStatus,
    RefundRequest,
    RefundState,
    RefundStatusRequest,
)

FAILING_AMOUNT = 50_300
SANDBOX_ISPB = "99999999"
ALPHANUMERIC = string.ascii_letters + string.digits
SUPPORTED = {
    "PIX": frozenset({"BRL"}),
    "BOLETO": frozenset({"BRL"}),
    "CREDIT_CARD": frozenset({"BRL", "EUR", "USD"}),
    "MBWAY": frozenset({"EUR"}),
    "MULTIBANCO": frozenset({"EUR"}),
    "CRYPTO": frozenset({"USDT", "USDC"}),
}
# What the instruments can carry: 10 digits on a boleto, 8 in a Multibanco reference.
AMOUNT_LIMITS = {"BOLETO": boleto.MAX_AMOUNT_CENTS, "MULTIBANCO": multibanco.MAX_AMOUNT_CENTS}
SANDBOX_BANK = "001"  # boletos carry a real bank code so readers accept the line
BOLETO_DUE_BUSINESS_DAYS = 3
MULTIBANCO_WINDOW = timedelta(days=3)
MBWAY_WINDOW = timedelta(minutes=5)
CRYPTO_QUOTE_WINDOW = timedelta(minutes=30)
CRYPTO_NETWORK = "BSC"
# Our statuses in the words a card acquirer's API would use (provider-status shows them).
ACQUIRER_STATUS = {
    "PENDING": "created",
    "WAITING_PAYMENT": "pending",
    "PROCESSING": "authorizing",
    "PAID": "paid",
    "APPROVED": "captured",
    "REFUSED": "declined",
    "CANCELLED": "canceled",
    "EXPIRED": "expired",
    "REFUNDED": "refunded",
    "CHARGEBACK": "charged_back",
    "DISPUTE": "disputed",
}


class SandboxProvider(PaymentProvider):
    name = "sandbox"
    refundable_methods = frozenset({"PIX", "CREDIT_CARD"})

    def __init__(self, public_base_url: str):
        self.public_base_url = public_base_url.rstrip("/")

    def supports(self, method: str, currency: str, amount: int) -> bool:
        limit = AMOUNT_LIMITS.get(method)
        within = limit is None or amount <= limit
        return within and currency in SUPPORTED.get(method, frozenset())

    def create_payment(self, request: PaymentRequest) -> PaymentInstructions:
        if request.amount == FAILING_AMOUNT:
            raise ProviderRefused(
                "Sandbox: the provider refused the payment (test amount 503,00).",
                code="sandbox_refused",
            )
        now = utcnow()
        reference = f"sbx_{request.method.lower()}_{uuid.UUID(request.reference).hex}"
        if request.method == "CREDIT_CARD":
            return PaymentInstructions(
                provider_reference=reference,
                expires_at=now + timedelta(seconds=request.expires_in),
                card_redirect_url=f"{self.public_base_url}/checkout/{request.reference}/card",
            )
        if request.method == "MBWAY":
            return PaymentInstructions(provider_reference=reference, expires_at=now + MBWAY_WINDOW)
        if request.method == "MULTIBANCO":
            return PaymentInstructions(
                provider_reference=reference,
                expires_at=now + MULTIBANCO_WINDOW,
                mb_entity=multibanco.SANDBOX_ENTITY,
                mb_reference=multibanco.reference(
                    multibanco.SANDBOX_ENTITY,
                    multibanco.sandbox_reference_id(request.reference),
                    request.amount,
                ),
            )
        if request.method == "BOLETO":
            return self._boleto(request, reference, now)
        if request.method == "CRYPTO":
            digest = hashlib.sha256(f"deposit:{request.reference}".encode()).hexdigest()
            return PaymentInstructions(
                provider_reference=reference,
                expires_at=now + CRYPTO_QUOTE_WINDOW,
                crypto_address="0x" + digest[:40],
                crypto_amount=format_money(request.amount, notation=DECIMAL_POINT),
                crypto_network=CRYPTO_NETWORK,
                crypto_currency=request.currency,
            )
        raise ProviderRefused(f"Sandbox: {request.method} is not offered.", code="unsupported")

    def _boleto(self, request: PaymentRequest, reference: str, now: datetime):
        """Due in three business days; payable until the end of the due date in São Paulo."""
        due = now.astimezone(SAO_PAULO).date()
        remaining = BOLETO_DUE_BUSINESS_DAYS
        while remaining:
            due += timedelta(days=1)
            remaining -= is_business_day(due)
        code = boleto.barcode(
            SANDBOX_BANK, request.amount, due, boleto.sandbox_free_field(request.reference)
        )
        return PaymentInstructions(
            provider_reference=reference,
            expires_at=boleto.end_of_due_date(due),
            boleto_barcode=code,
            boleto_line=boleto.digitable_line(code),
        )

    def payment_status(self, request: PaymentStatusRequest) -> ProviderStatus:
        """The record's status in a PSP's words: API Pix's for Pix, an acquirer's otherwise."""
        if request.method == "PIX":
            status = cob_status(request.status)
            raw = {"txid": request.provider_reference, "status": status}
            return ProviderStatus(status=status, raw=raw)
        status = ACQUIRER_STATUS[request.status]
        return ProviderStatus(
            status=status,
            raw={
                "id": request.provider_reference,
                "method": request.method,
                "status": status,
                "amount": request.amount,
                "currency": request.currency,
            },
        )

    def cancel_payment(self, method: str, provider_reference: str) -> None:
        """Nothing to withdraw: a cancelled record is no longer payable in the sandbox."""

    def refund(self, request: RefundRequest) -> str:
        return f"sbx_rf_{request.reference.replace('-', '')}"

    def refund_status(self, request: RefundStatusRequest) -> RefundState:
        """Done on the first poll; the failing amount is refused by the payer's bank."""
        if request.amount == FAILING_AMOUNT:
            return RefundState(
                status="FAILED",
                failure_reason="Sandbox: the payer's bank refused the refund (test amount 503,00).",
            )
        return RefundState(status="REFUNDED")

    def create_charge(self, request: PixChargeRequest) -> PixCharge:
        if request.amount == FAILING_AMOUNT:
            raise ProviderRefused(
                "Sandbox: the PSP refused to create the charge (test amount R$ 503,00).",
                code="sandbox_refused",
            )
        location_id = uuid.uuid4().hex
        try:
            br_code = brcode.dynamic_payload(
                location=locations.location(self.public_base_url, location_id),
                merchant_name=request.merchant_name,
                merchant_city=request.merchant_city,
                # A due date's amount changes by the day: the location's payload says it.
                amount_cents=None if request.due else request.amount,
            )
        except brcode.BrCodeError as error:
            raise ProviderRefused(
                f"Sandbox: no BR Code could be built ({error}).", "invalid_brcode"
            ) from error
        return PixCharge(
            txid=new_txid(),
            br_code=br_code,
            location_id=location_id,
            expires_at=(
                due.payable_until(request.due).astimezone(UTC)
                if request.due
                else utcnow() + timedelta(seconds=request.expires_in)
            ),
        )

    def return_pix(self, end_to_end_id: str, amount: int, refund_id: str) -> PixReturn:
        return PixReturn(
            return_id=new_return_id(SANDBOX_ISPB, utcnow()), status=RefundStatus.REFUNDED.value
        )

    def payout(self, request: PayoutRequest) -> PayoutSent:
        """Settles at once, with a reference derived from ours (a retry gets the same one);
        the failing amount is rejected, as an acquirer would."""
        if request.amount == FAILING_AMOUNT:
            raise PayoutRejected(
                "Sandbox: the acquirer rejected the payout (test amount 503,00).",
                code="sandbox_rejected",
            )
        digest = hashlib.sha256(request.reference.encode()).hexdigest()
        if request.payout_type == "CRYPTO":
            return PayoutSent(reference="0x" + digest)
        suffix = "".join(ALPHANUMERIC[int(digest[i : i + 2], 16) % 62] for i in range(0, 22, 2))
        stamp = request.requested_at.astimezone(UTC).strftime("%Y%m%d%H%M")
        return PayoutSent(reference=f"E{SANDBOX_ISPB}{stamp}{suffix}")
