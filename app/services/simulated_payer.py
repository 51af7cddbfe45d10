"""The sandbox's simulated payer: pays a test-mode transaction through the real settlement.

Used by `POST /v1/sandbox/charges/{id}/pay`, `POST /v1/sandbox/payments/{id}/pay` and the
test-mode checkout pages. Pix goes through `pix_payments.receive` and the other methods
through `payments.settle`, exactly as a live provider's notification would. Likewise
`POST /v1/sandbox/charges/{id}/dispute` is the payer's bank disputing a paid test charge
through the real dispute channel (`disputes.cases.open_case`).
"""

from datetime import timedelta

from flask import current_app

from app.errors import InvalidRequest, NotFound
from app.marks import translatable
from app.models import (
    DisputeCase,
    DisputeType,
    KeyMode,
    ReceivedPix,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix import due
from app.pix.identifiers import new_end_to_end_id
from app.providers.sandbox import SANDBOX_ISPB
from app.services.disputes import cases
from app.services.transactions import charges, lifecycle, payments, pix_payments

SANDBOX_PAYER_CPF = "52998224725"
SANDBOX_PAYER_NAME = "Pagador Sandbox"
SANDBOX_SOURCE = "sandbox"
EXPECTED_PAYER = object()


def simulate_payment(
    charge: Transaction,
    *,
    amount: int | None = None,
    payer_document: str | object | None = EXPECTED_PAYER,
    payer_name: str | None = None,
) -> ReceivedPix:
    """By default the exact amount (a due date's terms applied to today) from the expected
    payer; `payer_document=None` makes the bank report no payer document."""
    if charge.mode is not KeyMode.TEST:
        raise NotFound(translatable("No such charge."))
    if payer_document is EXPECTED_PAYER:
        payer_document = (
            charge.expected_payer_tax_id or charge.customer_document or SANDBOX_PAYER_CPF
        )
    now = utcnow()
    return pix_payments.receive(
        charge.id,
        pix_payments.IncomingPix(
            end_to_end_id=new_end_to_end_id(SANDBOX_ISPB, now),
            amount=due.amount_payable(charge, now) if amount is None else amount,
            payer_document=payer_document,
            payer_name=payer_name or charge.customer_name or SANDBOX_PAYER_NAME,
            received_at=now,
        ),
    )


def pay_by_method(
    transaction: Transaction, method: str | None, *, approved: bool = True
) -> Transaction:
    """Pay a test transaction awaiting payment by one of its methods (the only one when
    `method` is None); a card may be declined with `approved=False`."""
    if transaction.mode is not KeyMode.TEST:
        raise NotFound(translatable("No such charge."))
    offered = transaction.payment_methods
    if method is None:
        if len(offered) > 1:
            raise InvalidRequest(
                f"Say which method pays: one of {', '.join(offered)}.", param="method"
            )
        method = offered[0]
    if method not in offered:
        raise InvalidRequest(
            f"This transaction offers {', '.join(offered)}, not {method}.", param="method"
        )
    if not approved and method != payments.CARD:
        raise InvalidRequest("Only a card payment can be declined.", param="approved")
    locked = lifecycle.lock(transaction.id)
    if method == payments.PIX and locked.status is not TransactionStatus.PENDING:
        simulate_payment(locked)  # also when no longer payable: the Pix is then returned
        return locked
    charges.payability(locked).require()
    return payments.settle(locked, method, paid_at=utcnow(), approved=approved)


def open_dispute(charge: Transaction, report: dict) -> tuple[DisputeCase, bool]:
    """The payer's bank disputes a test-mode charge; `report` as the sandbox route takes it.
    Without `external_id`, one notification per charge: sending it again finds that case."""
    if charge.mode is not KeyMode.TEST:
        raise NotFound(translatable("No such charge."))
    now = utcnow()
    hours = current_app.config["SANDBOX_DISPUTE_RESPONSE_HOURS"]
    notice = cases.DisputeNotice(
        external_id=report.get("external_id") or f"sbx_{charge.id}",
        type=DisputeType(report["type"]),
        amount=report.get("amount"),
        method=report.get("method"),
        reason=report.get("reason"),
        response_deadline=report.get("response_deadline", now + timedelta(hours=hours)),
        payer_name=report.get("payer_name"),
        payer_document=report.get("payer_document"),
        opened_at=now,
    )
    return cases.open_case(charge.id, notice, source=SANDBOX_SOURCE)
