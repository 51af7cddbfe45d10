"""What a live PSP reports about received Pix (its webhook, or `GET /pix` when reconciling),
applied to our charges, refunds and dispute cases. One function applies what the PSP said,
`apply_received`, for both sources, so a Pix reported twice (webhook and reconciliation, or a
re-delivery) is handled once: every step is idempotent.

A webhook call is only a hint. Its path secret may leak and mutual TLS may be misconfigured,
so nothing it says is believed: `apply_webhook` asks the PSP for each Pix it names
(`GET /pix/{e2eid}`, over our own mutual TLS) and applies the PSP's answer, never the call's
body. A Pix the PSP does not know is never applied: it is an `unconfirmed_pix` notice (an
error in the log, an alert, the back office). One whose reported txid, amount or key differ
from the PSP's record is the same notice, and the PSP's own record is applied. A confirmation
is remembered for CONFIRMATION_TTL by the fingerprint of what was confirmed (amount, txid,
key, payer, devoluções and their statuses), so a re-delivery of the same Pix, or one already
listed by reconciliation, costs no second call; a call reporting anything new (a devolução
settled) is confirmed again.

For each Pix with a txid of one of our live charges, under the charge's row lock:
- the Pix goes through `pix_payments.receive` (idempotent by end-to-end id), so the sandbox's
  settlement rules apply: exact amount → paid; payer lock; another amount refused; after
  expiry → returned;
- each devolução that is one of our refunds (its id is `mapping.devolucao_id_for(refund id)`)
  moves that refund: an automatic return directly (no money of the merchant's is involved), a
  merchant refund through `refund_submission.submit`/`poll`, the path that books its ledger;
- a MED devolução (`mapping.MED_NATUREZAS`) that is none of ours is linked to a dispute
  case: the case opened earlier for it (external id = the devolução id), else the charge's
  undecided case holding exactly the devolução's amount, else, when the charge has no
  undecided case, a new case opened now from this channel. An undecided case holding another
  amount is never decided by it: that is left to operations (an error when the money has
  left). Once the devolução is `DEVOLVIDO` the case is decided `rejected` (the merchant lost;
  the held amount goes to the payer), with the devolução in the decision note.
  `EM_PROCESSAMENTO` or `NAO_REALIZADO` leaves the case open for operations.

A devolução status or natureza this release does not know decides nothing (the mapping's
tolerant reader) and becomes an `unknown_value` notice; the Pix and its other devoluções are
applied. A Pix with no txid, or whose txid names no live charge (a static QR code, a key
given by hand, another system's charge), is an `unmatched_pix` notice for the back office.

Kept whole past 400 lines: confirming a webhook's hint and applying the PSP's record are one
path, since every report, from either source, ends in `apply_received`.
"""

import hashlib
import json
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

import sqlalchemy as sa
from redis.exceptions import RedisError

from app.errors import ApiError, InvalidRequest
from app.extensions import db, get_redis
from app.formats.money import DECIMAL_POINT, format_money
from app.models import (
    FINAL_DISPUTE_STATUSES,
    FINAL_REFUND_STATUSES,
    DisputeCase,
    DisputeType,
    KeyMode,
    PspNoticeKind,
    Refund,
    RefundStatus,
    Transaction,
    TransactionStatus,
)
from app.providers import api_pix_client, api_pix_payer_path
from app.providers.api_pix.mapping import (
    COB_STATUS,
    Devolucao,
    PixEntry,
    devolucao_id_for,
    parse_pix,
    parse_webhook,
    transaction_id_of,
)
from app.providers.api_pix.problems import ApiPixRefused
from app.services import psp_notices
from app.services.disputes import cases
from app.services.transactions import (
    charge_expiry,
    lifecycle,
    payments,
    pix_payments,
    refund_submission,
)
from app.services.transactions.charges import PIX_CURRENCY

log = logging.getLogger(__name__)

DISPUTE_SOURCE = "api_pix"
CONFIRMED_KEY = "acme_api_pix_confirmed:"
CONFIRMATION_TTL = timedelta(days=7)


def apply_webhook(body: object) -> None:
    """Apply the Pix a webhook call names, as the PSP confirms them; the caller commits.
    InvalidRequest for a body that is not the standard's shape; ProviderError when the PSP
    cannot be asked (the call should be delivered again)."""
    try:
        reported = parse_webhook(body, api_pix_payer_path())
    except ValueError as error:
        raise InvalidRequest(f"Not an API Pix webhook body: {error}") from error
    for entry in reported:
        confirmed = _confirmed(entry)
        if confirmed is not None:
            apply_received([confirmed])


def read_listed(item: object) -> PixEntry | None:
    """A Pix from the PSP's own listing (`GET /pix`); one we cannot read is a notice and
    None, since it will not read better next time."""
    try:
        return parse_pix(item, api_pix_payer_path())
    except ValueError as error:
        _unreadable(item, str(error))
        return None


def apply_received(entries: Iterable[PixEntry]) -> None:
    """Apply Pix the PSP itself reported (its listing, or its answer confirming a webhook)
    and their devoluções; the caller commits (one transaction)."""
    for entry in entries:
        _remember_confirmed(entry)
        _notice_unknown_values(entry)
        charge_id = live_charge_id(entry.txid)
        if charge_id is None:
            psp_notices.record(
                PspNoticeKind.UNMATCHED_PIX,
                entry.end_to_end_id,
                f"Pix {entry.end_to_end_id} of "
                f"{format_money(entry.amount, PIX_CURRENCY, DECIMAL_POINT)} "
                f"(txid {entry.txid or 'none'}) belongs to no live charge of ours.",
                entry.raw,
            )
            continue
        charge = lifecycle.lock(charge_id)  # serialises the webhook and reconciliation
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


def apply_removed_cob(cob: dict) -> None:
    """A cob or cobv the PSP listed as removed (`REMOVIDA_PELO_PSP`, which no webhook
    reports): its charge, still awaiting payment, is cancelled as a merchant's cancel would
    (same events); one past its expiry is expired instead; one paid, expired or cancelled is
    left alone. A status this release does not know is a notice and decides nothing. The
    caller commits."""
    txid, status = cob.get("txid"), cob.get("status")
    if status not in COB_STATUS:
        psp_notices.record(
            PspNoticeKind.UNKNOWN_VALUE,
            f"cob.status={status}",
            f"cob.status {status!r}, unknown to this release, first met on cob {txid}; "
            "nothing was done to its charge.",
            cob,
        )
        return
    if COB_STATUS[status] is not TransactionStatus.CANCELLED:
        log.warning(
            "the PSP listed a cob not removed when asked for removed ones; ignored",
            extra={"txid": txid, "cob_status": status},
        )
        return
    charge_id = live_charge_id(txid) if isinstance(txid, str) else None
    if charge_id is None:
        log.warning("the PSP removed a cob that matches no live charge", extra={"txid": txid})
        return
    charge = charge_expiry.expire_if_due(lifecycle.lock(charge_id))
    if charge.status not in lifecycle.AWAITING_PAYMENT:
        log.info(
            "the PSP removed the cob of a charge no longer awaiting payment; left alone",
            extra={"charge_id": charge.id, "status": str(charge.status)},
        )
        return
    payments.mark_cancelled(charge, f"The PSP removed the charge's Pix code ({status}).")
    log.warning(
        "the PSP removed a pending charge's cob; charge cancelled", extra={"charge_id": charge.id}
    )


def _confirmed(reported: PixEntry) -> PixEntry | None:
    """The PSP's own record of a Pix a webhook reported, or None when it has none."""
    if _cached_fingerprint(reported.end_to_end_id) == _fingerprint(reported):
        return reported
    try:
        answer = api_pix_client().get_pix(reported.end_to_end_id)
    except ApiPixRefused as refusal:
        _unconfirmed(reported, f"the PSP has no such Pix ({refusal.status} {refusal.code})")
        return None
    confirmed = read_listed(answer)
    if confirmed is None or confirmed.end_to_end_id != reported.end_to_end_id:
        _unconfirmed(reported, "the PSP's answer is not a readable record of that Pix")
        return None
    differences = [
        name
        for name, ours, theirs in (
            ("txid", reported.txid, confirmed.txid),
            ("amount", reported.amount, confirmed.amount),
            ("key", reported.key or confirmed.key, confirmed.key),
        )
        if ours != theirs
    ]
    if differences:
        _unconfirmed(
            reported,
            f"its {', '.join(differences)} differ from the PSP's record, which is applied instead",
        )
    return confirmed


def _unconfirmed(reported: PixEntry, why: str) -> None:
    psp_notices.record(
        PspNoticeKind.UNCONFIRMED_PIX,
        reported.end_to_end_id,
        f"A webhook call reported Pix {reported.end_to_end_id} of "
        f"{format_money(reported.amount, PIX_CURRENCY, DECIMAL_POINT)} "
        f"(txid {reported.txid or 'none'}), not credited: {why}. A forged call means the "
        "webhook's path secret leaked or mutual TLS is not enforced.",
        reported.raw,
    )


def _unreadable(item: object, problem: str) -> None:
    reported = item if isinstance(item, dict) else {"value": repr(item)[:1000]}
    subject = reported.get("endToEndId") if isinstance(reported.get("endToEndId"), str) else None
    psp_notices.record(
        PspNoticeKind.UNREADABLE,
        subject or hashlib.sha256(problem.encode()).hexdigest(),
        f"The PSP reported a Pix we cannot read: {problem}",
        reported,
    )


def _notice_unknown_values(entry: PixEntry) -> None:
    for unknown in entry.unknown_values:
        psp_notices.record(
            PspNoticeKind.UNKNOWN_VALUE,
            f"{unknown.field}={unknown.value}",
            f"{unknown.field} {unknown.value!r}, unknown to this release, first met in Pix "
            f"{entry.end_to_end_id} ({unknown.where}); what it would decide was left for "
            "operations, the rest applied.",
            entry.raw,
        )
    for problem in entry.unreadable:
        psp_notices.record(
            PspNoticeKind.UNREADABLE,
            f"{entry.end_to_end_id} {problem}",
            f"Part of Pix {entry.end_to_end_id} could not be read and was skipped: {problem}",
            entry.raw,
        )


def _fingerprint(entry: PixEntry) -> str:
    """What a confirmation vouches for: the fields anything is decided on."""
    vouched = {
        "e2eid": entry.end_to_end_id,
        "txid": entry.txid,
        "amount": entry.amount,
        "key": entry.key,
        "received_at": entry.received_at.isoformat(),
        "payer": [entry.payer_document, entry.payer_name],
        "devolucoes": sorted(
            [d.id, d.status, d.natureza, d.amount, d.rtr_id, d.reason] for d in entry.devolucoes
        ),
    }
    return hashlib.sha256(json.dumps(vouched, sort_keys=True).encode()).hexdigest()


def _cached_fingerprint(end_to_end_id: str) -> str | None:
    """A cache, never a source of truth: without Redis the PSP is simply asked again."""
    try:
        cached = get_redis().get(CONFIRMED_KEY + end_to_end_id)
    except RedisError:
        log.warning("confirmation cache unavailable; asking the PSP", exc_info=True)
        return None
    return cached.decode() if cached else None


def _remember_confirmed(entry: PixEntry) -> None:
    try:
        get_redis().set(
            CONFIRMED_KEY + entry.end_to_end_id,
            _fingerprint(entry),
            ex=int(CONFIRMATION_TTL.total_seconds()),
        )
    except RedisError:
        log.warning("confirmation cache unavailable; not remembered", exc_info=True)


def live_charge_id(txid: str | None) -> str | None:
    """The live charge whose cob or cobv has this txid: its id is the txid read back
    (`mapping.transaction_id_of`), so the lookup is by primary key, confirmed by the stored
    txid."""
    charge_id = None if txid is None else transaction_id_of(txid)
    if charge_id is None:
        return None  # not a txid we issue
    return db.session.scalar(
        sa.select(Transaction.id).where(
            Transaction.id == charge_id,
            Transaction.pix_txid == txid,
            Transaction.mode == KeyMode.LIVE,
        )
    )


def awaited_cobv_creation_times() -> list[datetime]:
    """When each live charge with a due date still awaiting payment was created, in order:
    `GET /cobv` lists by creation and a cobv may stay payable for years, so its removals are
    listed around these moments rather than over a window as long as a cobv's life."""
    return list(
        db.session.scalars(
            sa.select(Transaction.created_at)
            .where(
                Transaction.mode == KeyMode.LIVE,
                Transaction.due_date.is_not(None),
                Transaction.status.in_(lifecycle.AWAITING_PAYMENT),
            )
            .order_by(Transaction.created_at)
        )
    )


def _refunds_of(charge: Transaction) -> list[Refund]:
    return list(db.session.scalars(sa.select(Refund).where(Refund.transaction_id == charge.id)))


def _apply_refund_status(refund: Refund, devolucao: Devolucao) -> None:
    """Move one of our refunds to the reported status; a final status is never undone."""
    reported = devolucao.state
    if reported is None or refund.status in FINAL_REFUND_STATUSES or refund.status is reported:
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
    """A merchant refund moves money in our ledger, which `refund_submission` alone books: the
    report makes it submit a still-PENDING refund (the same devolução id, so nothing is sent
    twice) and ask the PSP for the final status, as its polling job does."""
    if reported not in FINAL_REFUND_STATUSES:
        return  # in progress: the polling job follows it
    if refund_submission.submit(refund.id).status is RefundStatus.IN_PROGRESS:
        refund_submission.poll(refund.id)


def _apply_med(charge: Transaction, entry: PixEntry, devolucao: Devolucao) -> None:
    """Link a MED devolução to a dispute case and decide the case once the money has left;
    money that left with no case to book it against is an error for operations."""
    case = _case_for(charge, entry, devolucao)
    if devolucao.state is not RefundStatus.REFUNDED:
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
    cases.decide(case.id, "rejected", note=_describe(devolucao))


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
    notice = cases.DisputeNotice(
        external_id=devolucao.id,
        type=DisputeType.MED,
        amount=devolucao.amount,
        reason=_describe(devolucao),
        reference_id=entry.end_to_end_id,
        opened_at=devolucao.requested_at,
    )
    try:
        case, _ = cases.open_case(charge.id, notice, source=DISPUTE_SOURCE)
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
