"""The sandbox's simulated payer bank: pays a test-mode charge through the real settlement.

Used by `POST /v1/sandbox/charges/{id}/pay` and the test-mode checkout page's button; both
go through `pix_payments.receive`, exactly like a live PSP's notification would.
"""

from app.errors import NotFound
from app.models import KeyMode, ReceivedPix, Transaction
from app.models.base import utcnow
from app.pix.identifiers import new_end_to_end_id
from app.providers.sandbox import SANDBOX_ISPB
from app.services import pix_payments

SANDBOX_PAYER_CPF = "52998224725"
SANDBOX_PAYER_NAME = "Pagador Sandbox"
EXPECTED_PAYER = object()


def simulate_payment(
    charge: Transaction,
    *,
    amount: int | None = None,
    payer_document: str | object | None = EXPECTED_PAYER,
    payer_name: str | None = None,
) -> ReceivedPix:
    """By default the exact amount from the expected payer; `payer_document=None` makes the
    bank report no payer document."""
    if charge.mode is not KeyMode.TEST:
        raise NotFound("No such charge.")
    if payer_document is EXPECTED_PAYER:
        payer_document = (
            charge.expected_payer_tax_id or charge.customer_document or SANDBOX_PAYER_CPF
        )
    now = utcnow()
    return pix_payments.receive(
        charge.id,
        pix_payments.IncomingPix(
            end_to_end_id=new_end_to_end_id(SANDBOX_ISPB, now),
            amount=charge.amount if amount is None else amount,
            payer_document=payer_document,
            payer_name=payer_name or charge.customer_name or SANDBOX_PAYER_NAME,
            received_at=now,
        ),
    )
