"""The sandbox provider for test-mode keys: real BR Codes, no call to anything outside.

It issues dynamic codes whose location is served by this service
(`/v1/pix/locations/<id>`, answering the charge's payload). Payments are simulated with
`POST /v1/sandbox/charges/{id}/pay` or the checkout page's button. Payouts settle at once.
One amount fails on purpose so integrations can test the failure paths: 503,00
(`FAILING_AMOUNT`) makes charge creation fail and payouts be rejected.
"""

import hashlib
import string
import uuid
from datetime import UTC, timedelta
from urllib.parse import urlsplit

import sqlalchemy as sa

from app.extensions import db
from app.formats.locations import cob_status
from app.models import Transaction
from app.models.base import utcnow
from app.pix import brcode
from app.pix.identifiers import new_return_id, new_txid
from app.providers.base import (
    PayoutRejected,
    PayoutRequest,
    PayoutSent,
    PixCharge,
    PixChargeRequest,
    PixProvider,
    PixReturn,
    ProviderError,
)

FAILING_AMOUNT = 50_300
SANDBOX_ISPB = "99999999"
ALPHANUMERIC = string.ascii_letters + string.digits
LOCATION_PATH = "/v1/pix/locations/"


class SandboxPixProvider(PixProvider):
    name = "sandbox"

    def __init__(self, public_base_url: str):
        parts = urlsplit(public_base_url)
        self.location_prefix = f"{parts.netloc}{parts.path.rstrip('/')}{LOCATION_PATH}"

    def create_charge(self, request: PixChargeRequest) -> PixCharge:
        if request.amount == FAILING_AMOUNT:
            raise ProviderError(
                "Sandbox: the PSP refused to create the charge (test amount R$ 503,00).",
                code="sandbox_refused",
            )
        location_id = uuid.uuid4().hex
        try:
            br_code = brcode.dynamic_payload(
                location=self.location_prefix + location_id,
                merchant_name=request.merchant_name,
                merchant_city=request.merchant_city,
                amount_cents=request.amount,
            )
        except brcode.BrCodeError as error:
            raise ProviderError(
                f"Sandbox: no BR Code could be built ({error}).", "invalid_brcode"
            ) from error
        return PixCharge(
            txid=new_txid(),
            br_code=br_code,
            location_id=location_id,
            expires_at=utcnow() + timedelta(seconds=request.expires_in),
        )

    def charge_status(self, txid: str) -> str:
        """The sandbox keeps no books of its own: the charge record is its state."""
        charge = db.session.scalar(sa.select(Transaction).where(Transaction.pix_txid == txid))
        if charge is None:
            raise ProviderError("Sandbox: no charge has this txid.", code="not_found")
        return cob_status(charge.status)

    def return_pix(self, end_to_end_id: str, amount: int, refund_id: str) -> PixReturn:
        return PixReturn(return_id=new_return_id(SANDBOX_ISPB, utcnow()), status="DEVOLVIDO")

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
