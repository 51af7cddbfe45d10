"""What a live PSP reports about received Pix (its webhook, or `GET /pix` when reconciling),
applied to our charges, refunds and dispute cases. One entry point, `apply_received`, serves
both sources, so a Pix reported twice (webhook and reconciliation, or a re-delivery) is
handled once: every step is idempotent.

For each Pix with a txid, under the charge's row lock:
- the Pix goes through `pix_payments.receive` (idempotent by end-to-end id), so the sandbox's
  settlement rules apply: exact amount → paid; payer lock; another amount refused; after
  expiry → returned;
- each devolução that is one of our refunds (its id is `mapping.devolucao_id_for(refund id)`)
  moves that refund: an automatic return directly (no money of the merchant's is involved), a
  merchant refund through `refunds.submit`/`refunds.poll`, the path that books its ledger;
- a MED devolução (`mapping.MED_NATUREZAS`) that is none of ours is linked to a dispute
  case: the case opened earlier for it (external id = the devolução id), else the charge's
  undecided case holding exactly the devolução's amount, else, when the charge has no
  undecided case, a new case opened now from this channel. An undecided case holding another
  amount is never decided by it: that is left to operations (an error when the money has
  left). Once the devolução is `DEVOLVIDO` the case is decided `rejected` (the merchant lost;
  the held amount goes to the payer), with the devolução in the decision note.
  `EM_PROCESSAMENTO` or `NAO_REALIZADO` leaves the case open for operations.

A Pix without a txid, or whose txid names no live charge, is logged and left alone.
"""

import logging
import uuid
from collections.abc import Iterable

import sqlalchemy as sa

from app.errors import ApiError
from app.extensions import db
from app.models import (
    FINAL_DISPUTE_STATUSES,
    FINAL_REFUND_STATUSES,
    DisputeCase,
    DisputeType,
    KeyMode,
    Refund,
    RefundStatus,
    Transaction,
)
from app.providers.api_pix.mapping import (
    REFUND_STATUS,
    Devolucao,
    PixEntry,
    devolucao_id_for,
)
from app.services import disputes, pix_payments, refunds, transactions

log = logging.getLogger(__name__)

DISPUTE_SOURCE = "api_pix"


def apply_received(entries: Iterable[PixEntry]) -> None:
    """Apply each reported Pix and its devoluções; the caller commits (one transaction)."""
    for entry in entries:
        charge_id = live_charge_id(entry.txid)
        if charge_id is None:
            log.warning(
                "received Pix matches no live charge; acknowledged and ignored",
                extra={"end_to_end_id": entry.end_to_end_id, "txid": entry.txid},
            )
            continue
        charge = transactions.lock(charge_id)  # serialises the webhook and reconciliation
        pix_payments.receive(
            charge.id,
            pix_payments.IncomingPix(
                end_to_end_id=entry.end_to_end_id,
                amount=entry.amount,
                payer_document=entry.payer_document,
                payer_name=entry.payer_name,
                received_at=entry.received_at,
            ),
        )
        ours = {devolucao_id_for(refund.id): refund for refund in _refunds_of(charge)}
        for devolucao in entry.devolucoes:
            refund = ours.get(devolucao.id)
            if refund is not None:
                _apply_refund_status(refund, devolucao)
            elif devolucao.is_med:
                _apply_med(charge, entry, devolucao)
            else:
                log.warning(
                    "devolução not requested by us; ignored",
                    extra={"end_to_end_id": entry.end_to_end_id, "devolucao_id": devolucao.id},
                )


def live_charge_id(txid: str | None) -> str | None:
    """The live charge whose cob has this txid: its id is the txid read back as a uuid
    (`mapping.txid_for`), so the lookup is by primary key, confirmed by the stored txid."""
    if txid is None:
        return None
    try:
        charge_id = str(uuid.UUID(hex=txid))
    except ValueError:
        return None  # not a txid we issue
    return db.session.scalar(
        sa.select(Transaction.id).where(
            Transaction.id == charge_id,
            Transaction.pix_txid == txid,
            Transaction.mode == KeyMode.LIVE,
        )
    )


def _refunds_of(charge: Transaction) -> list[Refund]:
    return list(db.session.scalars(sa.select(Refund).where(Refund.transaction_id == charge.id)))


def _apply_refund_status(refund: Refund, devolucao: Devolucao) -> None:
    """Move one of our refunds to the reported status; a final status is never undone."""
    reported = REFUND_STATUS[devolucao.status]
    if refund.status in FINAL_REFUND_STATUSES or refund.status is reported:
        return
    if not refund.automatic:
        _settle_merchant_refund(refund, reported)
        return
    pix_payments.settle_return(
        refund,
        reported,
        failure_reason=devolucao.reason,
        return_id=devolucao.rtr_id,
        settled_at=devolucao.settled_at,
    )


def _settle_merchant_refund(refund: Refund, reported: RefundStatus) -> None:
    """A merchant refund moves money in our ledger, which `refunds` alone books: the report
    makes it submit a still-PENDING refund (the same devolução id, so nothing is sent twice)
    and ask the PSP for the final status, as its polling job does."""
    if reported not in FINAL_REFUND_STATUSES:
        return  # in progress: the polling job follows it
    if refunds.submit(refund.id).status is RefundStatus.IN_PROGRESS:
        refunds.poll(refund.id)


def _apply_med(charge: Transaction, entry: PixEntry, devolucao: Devolucao) -> None:
    """Link a MED devolução to a dispute case and decide the case once the money has left;
    money that left with no case to book it against is an error for operations."""
    case = _case_for(charge, entry, devolucao)
    if REFUND_STATUS[devolucao.status] is not RefundStatus.REFUNDED:
        return
    if case is not None and case.is_final:
        return
    if case is None or case.under_review:
        log.error(
            "MED devolução settled at the PSP but not booked; operations must decide its case",
            extra={
                "transaction_id": charge.id,
                "devolucao_id": devolucao.id,
                "case_id": case.id if case else None,
            },
        )
        return
    disputes.decide(case.id, "rejected", note=_describe(devolucao))


def _case_for(charge: Transaction, entry: PixEntry, devolucao: Devolucao) -> DisputeCase | None:
    """The case opened earlier for this devolução (or decided by it), else the charge's
    undecided case holding its amount, else a new one. None, logged, when another undecided
    case holds a different amount (deciding it would settle the wrong dispute) or the charge
    cannot be disputed (refunded, or a case already lost)."""
    linked = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.transaction_id == charge.id,
            sa.or_(
                DisputeCase.external_id == devolucao.id,
                # a case matched by amount and decided by this devolução, on a re-delivery
                DisputeCase.decision_note.startswith(_described_prefix(devolucao)),
            ),
        )
    )
    if linked is not None:
        return linked
    undecided = list(
        db.session.scalars(
            sa.select(DisputeCase)
            .where(
                DisputeCase.transaction_id == charge.id,
                DisputeCase.status.not_in(FINAL_DISPUTE_STATUSES),
            )
            .order_by(DisputeCase.created_at.desc())
        )
    )
    same_amount = [case for case in undecided if case.held_amount == devolucao.amount]
    if same_amount:
        return same_amount[0]
    if undecided:
        log.warning(
            "MED devolução matches no undecided case's held amount; left to operations",
            extra={
                "transaction_id": charge.id,
                "devolucao_id": devolucao.id,
                "amount": devolucao.amount,
                "case_ids": [case.id for case in undecided],
            },
        )
        return None
    notice = disputes.DisputeNotice(
        external_id=devolucao.id,
        type=DisputeType.MED,
        amount=devolucao.amount,
        reason=_describe(devolucao),
        reference_id=entry.end_to_end_id,
        opened_at=devolucao.requested_at,
    )
    try:
        case, _ = disputes.open_case(charge.id, notice, source=DISPUTE_SOURCE)
    except ApiError as error:  # refused before writing anything
        log.warning(
            "MED devolução not linked to a dispute case",
            extra={"transaction_id": charge.id, "devolucao_id": devolucao.id, "code": error.code},
        )
        return None
    return case


def _described_prefix(devolucao: Devolucao) -> str:
    """How a decision note names the devolução that decided the case (`_describe`)."""
    return f"MED devolução {devolucao.id} ("


def _describe(devolucao: Devolucao) -> str:
    text = f"{_described_prefix(devolucao)}{devolucao.natureza}) {devolucao.status} at the PSP"
    if devolucao.rtr_id:
        text += f", rtrId {devolucao.rtr_id}"
    return f"{text}: {devolucao.reason}" if devolucao.reason else text
