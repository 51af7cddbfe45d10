"""Dispute cases (MED, chargebacks): opening, the merchant's appeal or acceptance, evidence,
and the decision from the dispute channel, with the money each step moves.

Money, one ledger posting per case and step (unique by kind and case id):
- opening holds what is at risk (`dispute_holds`): the disputed amount, less what the
  merchant's completed refunds already returned: available → retained (available may go
  negative); a refund in flight is held as if it will fail, and its completion releases
  that part;
- `refunded_to_merchant` releases the hold: retained → available, and the charge is paid
  again;
- `lost` (accepted, rejected) and `closed_without_refund` send the hold to the payer's bank:
  retained → provider clearing; the charge stays disputed, and refunds of it still waiting
  for money end FAILED.
A case whose reported amount differs from the charge's holds nothing and changes no status:
it is flagged (`amount_mismatch`, `under_review`) for the operations team, and cannot be lost
until staff confirm the amount to hold (`confirm_amount`).

Events: `med_case.created` on opening, `med_case.updated` on every status change and when
evidence is requested, `med.resolved` with the money outcome. Outcome notices can be switched
off (`DISPUTE_OUTCOME_EVENTS`). No `charge.*` event is ever sent because of a dispute. The
account's OWNERs and ADMINs are e-mailed when a case opens and when it is resolved, by a job
that a periodic sweep retries until the mail is sent.
"""

import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

import sqlalchemy as sa
from flask import current_app

from app.errors import Conflict, InvalidRequest, NotFound, ServiceUnavailable
from app.extensions import DEFAULT_QUEUE, db
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.disputes import med_case_object, med_metadata
from app.jobs.queueing import enqueue_after_commit
from app.models import (
    DISPUTED_STATUSES,
    SETTLED_STATUSES,
    DisputeCase,
    DisputeEvidence,
    DisputeStatus,
    DisputeType,
    EvidenceUploader,
    KeyMode,
    LedgerAccount,
    MoneyOutcome,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.services import accounts, audit, dispute_holds, ledger, payments, refunds, transactions
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.charges import MAX_AMOUNT
from app.services.events import record_event
from app.services.ledger import Line
from app.services.refund_totals import refunded_total
from app.services.state_machine import StateMachine
from app.storage import (
    ALLOWED_TYPES,
    MAX_EVIDENCE_BYTES,
    StorageUnavailable,
    UploadTicket,
    content_matches_type,
    evidence_storage,
)

CASE_PREFIX = "med_"
EVIDENCE_PREFIX = "medev_"
# A notification id from the dispute channel. The OpenAPI document publishes the pattern as
# written (ECMA-262, anchored), so it is applied with `fullmatch`: Python's `$` alone would
# also take a final newline.
EXTERNAL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MED_METHODS = ("scam", "unauthorized", "coercion", "invasion", "other")
MIN_APPEAL, MAX_APPEAL = 5, 2000
MAX_REASON = 2000
MAX_FILE_NAME = 255
DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT = 25, 100
NOTICE_JOB = "app.jobs.disputes.send_dispute_notices"
HOLD, RELEASE, LOSS = "dispute_hold", "dispute_release", "dispute_loss"
NOT_OPEN = "med_case_not_open"
UNDER_REVIEW = "med_case_under_review"
NOTICE_GRACE = timedelta(minutes=1)
WAITING_REFUND_ENDED = (
    "Not sent: the payer's bank already returned the disputed amount (the dispute was lost)."
)
DECISIONS = {
    "rejected": (DisputeStatus.REJECTED, MoneyOutcome.LOST),
    "refunded_to_merchant": (DisputeStatus.CLOSED, MoneyOutcome.REFUNDED_TO_MERCHANT),
    "closed_without_refund": (DisputeStatus.CLOSED, MoneyOutcome.CLOSED_WITHOUT_REFUND),
}
# What each outcome did with the held amount, in the merchant's words (e-mail, dashboard).
OUTCOME_EFFECTS = {
    MoneyOutcome.REFUNDED_TO_MERCHANT: "the held amount is back in your available balance",
    MoneyOutcome.CLOSED_WITHOUT_REFUND: "the held amount is not returned to you",
    MoneyOutcome.LOST: "the held amount was returned to the payer",
}
NOTICE_COLUMNS = {
    "opened": DisputeCase.opened_notice_sent_at,
    "resolved": DisputeCase.resolved_notice_sent_at,
}
_SAFE_FILE_NAME = re.compile(r"[^/\\]+")
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
S = DisputeStatus
# The contract's case states: the merchant appeals or accepts an open case; the dispute
# channel rejects or closes an open or appealed one. Decided cases never move again.
CASE_MACHINE = StateMachine(
    "dispute case",
    {
        S.OPEN: frozenset({S.APPEALED, S.ACCEPTED, S.REJECTED, S.CLOSED}),
        S.APPEALED: frozenset({S.REJECTED, S.CLOSED}),
    },
)
S_T = TransactionStatus
RETAINED, TO_PAYER = LedgerAccount.RETAINED, LedgerAccount.PROVIDER_CLEARING


@dataclass(frozen=True)
class DisputeNotice:
    """A dispute as the channel reports it; `external_id` identifies the notification, so a
    re-delivery finds the case it opened. `amount` None means the charge's amount."""

    external_id: str
    type: DisputeType = DisputeType.MED
    amount: int | None = None
    method: str | None = None
    reason: str | None = None
    response_deadline: datetime | None = None
    reference_id: str | None = None
    payer_name: str | None = None
    payer_document: str | None = None
    opened_at: datetime | None = None


@dataclass(frozen=True)
class CaseQuery:
    limit: int = DEFAULT_LIST_LIMIT
    starting_after: str | None = None
    status: str | None = None
    type: str | None = None
    charge_id: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


@dataclass(frozen=True)
class CasePage:
    data: list[DisputeCase]
    has_more: bool

    @property
    def next_cursor(self) -> str | None:
        return self.data[-1].id if self.has_more and self.data else None


# Opening


def open_case(
    transaction_id: str, notice: DisputeNotice, *, source: str
) -> tuple[DisputeCase, bool]:
    """The case for this notification, opened now or found (re-delivery); True when new.

    The transaction's row lock serialises notifications about it, so two deliveries of one
    notification at once open one case."""
    transaction = transactions.lock(transaction_id)
    existing = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.transaction_id == transaction.id,
            DisputeCase.external_id == notice.external_id,
        )
    )
    if existing is not None:
        return existing, False
    _check_notice(transaction, notice)
    now = utcnow()
    amount = transaction.amount if notice.amount is None else notice.amount
    mismatch = amount != transaction.amount
    case = DisputeCase(
        id=f"{CASE_PREFIX}{uuid.uuid4()}",
        account_id=transaction.account_id,
        mode=transaction.mode,
        transaction_id=transaction.id,
        external_id=notice.external_id,
        source=source,
        type=notice.type,
        status=S.OPEN,
        amount=amount,
        currency=transaction.currency,
        held_amount=0,
        hold_limit=None if mismatch else transaction.amount,
        amount_mismatch=mismatch,
        under_review=mismatch,
        method=notice.method,
        reason=notice.reason,
        reference_id=notice.reference_id or transaction.end_to_end_id,
        payer_name=notice.payer_name,
        payer_document=notice.payer_document,
        response_deadline=notice.response_deadline,
        opened_at=notice.opened_at or now,
        created_at=now,
        updated_at=now,
    )
    db.session.add(case)
    db.session.flush()
    if not mismatch:
        case.held_amount = dispute_holds.due_hold(case, transaction)
        _hold(case, transaction, now)
    _refresh_metadata(transaction, case, now)
    _record(case, "med_case.created")
    enqueue_after_commit(db.session(), DEFAULT_QUEUE, NOTICE_JOB, case.id)
    return case, True


def _hold(case: DisputeCase, transaction: Transaction, now: datetime) -> None:
    """The disputed amount leaves available for retained; the charge becomes disputed."""
    if case.held_amount:
        _post(case, HOLD, "Disputed amount held", LedgerAccount.AVAILABLE, LedgerAccount.RETAINED)
    transactions.transition(transaction, _disputed_status(transaction, case), at=now)


def _check_disputable(transaction: Transaction) -> None:
    if transaction.status not in SETTLED_STATUSES:
        raise Conflict(
            f"Only a paid charge can be disputed; this one is {transaction.status}.",
            code="charge_not_disputable",
        )


def _check_notice(transaction: Transaction, notice: DisputeNotice) -> None:
    _check_disputable(transaction)
    if not EXTERNAL_ID.fullmatch(notice.external_id or ""):
        raise InvalidRequest(
            "external_id is 1 to 64 letters, digits, '_' or '-'.", param="external_id"
        )
    if notice.amount is not None and not 0 < notice.amount <= MAX_AMOUNT:
        raise InvalidRequest(
            f"amount is an integer from 1 to {MAX_AMOUNT}.", code="invalid_amount", param="amount"
        )
    if notice.method is not None and notice.method not in MED_METHODS:
        raise InvalidRequest(f"method is one of {', '.join(MED_METHODS)}.", param="method")
    if notice.reason is not None and len(notice.reason) > MAX_REASON:
        raise InvalidRequest(f"reason is at most {MAX_REASON} characters.", param="reason")


def _disputed_status(transaction: Transaction, case: DisputeCase) -> TransactionStatus:
    """A card chargeback is CHARGEBACK; every other dispute (MED included) is DISPUTE."""
    chargeback = case.type is DisputeType.CHARGEBACK
    if chargeback and transaction.status is TransactionStatus.APPROVED:
        return TransactionStatus.CHARGEBACK
    return TransactionStatus.DISPUTE


# Reading


def get_case(account_id: str, mode: KeyMode, case_id: str) -> DisputeCase:
    """A case of the caller's account and mode; anything else is 404."""
    case = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.id == case_id,
            DisputeCase.account_id == account_id,
            DisputeCase.mode == mode,
        )
    )
    if case is None:
        raise NotFound("No such dispute case.")
    return case


def list_cases(account_id: str, mode: KeyMode, query: CaseQuery) -> CasePage:
    """Newest first, ties broken by id, so a cursor never skips or repeats a case."""
    conditions = [DisputeCase.account_id == account_id, DisputeCase.mode == mode]
    if query.starting_after is not None:
        cursor = _cursor_case(account_id, mode, query.starting_after)
        conditions.append(
            sa.tuple_(DisputeCase.created_at, DisputeCase.id)
            < sa.tuple_(sa.literal(cursor.created_at, DisputeCase.created_at.type), cursor.id)
        )
    if query.status is not None:
        conditions.append(DisputeCase.status == DisputeStatus(query.status))
    if query.type is not None:
        conditions.append(DisputeCase.type == DisputeType(query.type))
    if query.charge_id is not None:
        conditions.append(DisputeCase.transaction_id == _charge_filter(query.charge_id))
    if query.created_after is not None:
        conditions.append(DisputeCase.created_at > query.created_after)
    if query.created_before is not None:
        conditions.append(DisputeCase.created_at < query.created_before)
    rows = db.session.scalars(
        sa.select(DisputeCase)
        .where(*conditions)
        .order_by(DisputeCase.created_at.desc(), DisputeCase.id.desc())
        .limit(query.limit + 1)
    ).all()
    return CasePage(data=list(rows[: query.limit]), has_more=len(rows) > query.limit)


def _cursor_case(account_id: str, mode: KeyMode, cursor: str) -> DisputeCase:
    if not cursor.startswith(CASE_PREFIX):
        raise InvalidRequest("starting_after takes a case id (med_…).", param="starting_after")
    case = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.id == cursor,
            DisputeCase.account_id == account_id,
            DisputeCase.mode == mode,
        )
    )
    if case is None:
        raise InvalidRequest(
            "starting_after is not a case of this account.", param="starting_after"
        )
    return case


def _charge_filter(charge_id: str) -> str:
    raw = charge_id.removeprefix(CHARGE_ID_PREFIX)
    if not charge_id.startswith(CHARGE_ID_PREFIX) or not raw:
        raise InvalidRequest("charge_id takes a charge id (ch_…).", param="charge_id")
    return raw


def evidence_counts(case_ids: list[str]) -> dict[str, int]:
    """Confirmed evidence per case, in one query (a list page counts all its cases at once)."""
    if not case_ids:
        return {}
    rows = db.session.execute(
        sa.select(DisputeEvidence.case_id, sa.func.count())
        .where(DisputeEvidence.case_id.in_(case_ids), DisputeEvidence.uploaded_at.is_not(None))
        .group_by(DisputeEvidence.case_id)
    )
    counts = dict.fromkeys(case_ids, 0)
    counts.update({case_id: int(count) for case_id, count in rows})
    return counts


def case_object(case: DisputeCase) -> dict:
    """The public `med_case` of one case (with its evidence count)."""
    return med_case_object(case, evidence_counts([case.id])[case.id])


def open_cases_by_deadline(account_id: str, mode: KeyMode) -> list[DisputeCase]:
    """Open and appealed cases, the most urgent deadline first (the dashboard's notice)."""
    return list(
        db.session.scalars(
            sa.select(DisputeCase)
            .where(
                DisputeCase.account_id == account_id,
                DisputeCase.mode == mode,
                DisputeCase.status.in_((S.OPEN, S.APPEALED)),
            )
            .order_by(DisputeCase.response_deadline.is_(None), DisputeCase.response_deadline)
        )
    )


# The merchant's answers


def appeal(
    account_id: str, mode: KeyMode, case_id: str, reason: str, actor_user_id: str | None = None
) -> DisputeCase:
    """Contest an open case; the amount stays held until the decision."""
    text = reason.strip() if isinstance(reason, str) else ""
    if not MIN_APPEAL <= len(text) <= MAX_APPEAL:
        raise InvalidRequest(f"reason is {MIN_APPEAL} to {MAX_APPEAL} characters.", param="reason")
    case = _lock(get_case(account_id, mode, case_id).id)
    appealability(case).require()
    now = utcnow()
    CASE_MACHINE.move(case, S.APPEALED)
    case.appeal_reason, case.appealed_at, case.updated_at = text, now, now
    _audit(case, actor_user_id, "med_case.appealed")
    _changed(case, now)
    return case


def accept(
    account_id: str, mode: KeyMode, case_id: str, actor_user_id: str | None = None
) -> DisputeCase:
    """Give up an open case: final, the held amount goes to the payer (`lost`)."""
    case = _lock(get_case(account_id, mode, case_id).id)
    acceptability(case).require()
    _audit(case, actor_user_id, "med_case.accepted")
    _finish(case, S.ACCEPTED, MoneyOutcome.LOST)
    return case


def appealability(case: DisputeCase) -> Allowance:
    """May the merchant appeal? Once per case, while it is open: an appealed case waits for
    the decision, a decided one is over."""
    return _still_open(case, "appealed")


def acceptability(case: DisputeCase) -> Allowance:
    """May the merchant accept (lose) the case? While it is open and its amount is settled."""
    return _still_open(case, "accepted") & _reviewed(case, MoneyOutcome.LOST)


def attachability(case: DisputeCase) -> Allowance:
    """May evidence be attached? Until the case is decided: an appeal is judged on it."""
    if case.is_final:
        return refused(
            Conflict(
                f"The case is {case.status}; evidence can no longer be attached.", code=NOT_OPEN
            )
        )
    return ALLOWED


def _still_open(case: DisputeCase, becoming: str) -> Allowance:
    """The contract fixes this refusal at 400 (appealing or accepting a case that is not
    open); every other action a decided case no longer allows is a 409."""
    if case.status is S.OPEN:
        return ALLOWED
    return refused(
        InvalidRequest(
            f"Only an open case can be {becoming}; this one is {case.status}.", code=NOT_OPEN
        )
    )


def _reviewed(case: DisputeCase, outcome: MoneyOutcome) -> Allowance:
    """A case whose amount differs from the charge's held nothing: until operations confirm
    the amount (and hold it), no outcome may send money to the payer."""
    if case.under_review and outcome is not MoneyOutcome.REFUNDED_TO_MERCHANT:
        return refused(
            Conflict(
                "The reported amount differs from the charge's; our operations team must "
                "confirm the disputed amount before the case can be lost.",
                code=UNDER_REVIEW,
            )
        )
    return ALLOWED


# The dispute channel's decisions (provider, sandbox, operations staff)


def request_evidence(case_id: str, actor_user_id: str | None = None) -> DisputeCase:
    """The platform asks the merchant for evidence (`evidence_requested_at`)."""
    case = _lock(case_id)
    if case is None:
        raise NotFound("No such dispute case.")
    if case.is_final:
        raise Conflict(f"The case is already {case.status}.", code=NOT_OPEN)
    now = utcnow()
    case.evidence_requested_at = case.updated_at = now
    _audit(case, actor_user_id, "med_case.evidence_requested")
    _changed(case, now)
    return case


def decide(
    case_id: str, decision: str, actor_user_id: str | None = None, note: str | None = None
) -> DisputeCase:
    """Apply the channel's decision to an open or appealed case: `rejected` (lost),
    `refunded_to_merchant` or `closed_without_refund` (both closed)."""
    if decision not in DECISIONS:
        raise InvalidRequest(f"decision is one of {', '.join(DECISIONS)}.", param="decision")
    case = _lock(case_id)
    if case is None:
        raise NotFound("No such dispute case.")
    if case.is_final:
        raise Conflict(f"The case is already {case.status}.", code=NOT_OPEN)
    status, outcome = DECISIONS[decision]
    _reviewed(case, outcome).require()
    case.decided_by = actor_user_id
    case.decision_note = (note or "").strip()[:500] or None
    _audit(case, actor_user_id, f"med_case.{decision}")
    _finish(case, status, outcome)
    return case


def confirm_amount(case_id: str, amount: int, actor_user_id: str | None) -> DisputeCase:
    """Operations settle a case whose reported amount differed: `amount` (at most what the
    merchant still has of the charge) is held now and the charge becomes disputed; from then
    on the case is decided like any other."""
    case = _lock(case_id)
    if case is None:
        raise NotFound("No such dispute case.")
    if case.is_final or not case.under_review:
        raise Conflict("Only an undecided case under review can be confirmed.", code=NOT_OPEN)
    transaction = transactions.lock(case.transaction_id)
    _check_disputable(transaction)
    unrefunded = transaction.amount - refunded_total(transaction)
    if not isinstance(amount, int) or not 0 < amount <= unrefunded:
        raise InvalidRequest(
            f"amount is from 1 to {max(unrefunded, 0)} (the charge less its completed refunds).",
            code="invalid_amount",
            param="amount",
        )
    now = utcnow()
    case.hold_limit, case.under_review, case.updated_at = amount, False, now
    case.held_amount = dispute_holds.due_hold(case, transaction)
    _audit(case, actor_user_id, "med_case.amount_confirmed")
    _hold(case, transaction, now)
    _refresh_metadata(transaction, case, now)
    return case


def _finish(case: DisputeCase, status: DisputeStatus, outcome: MoneyOutcome) -> None:
    now = utcnow()
    CASE_MACHINE.move(case, status)
    case.money_outcome, case.closed_at, case.updated_at = outcome, now, now
    transaction = transactions.lock(case.transaction_id)
    won = outcome is MoneyOutcome.REFUNDED_TO_MERCHANT
    if case.held_amount and won:
        _post(case, RELEASE, "Dispute won, held amount returned", RETAINED, LedgerAccount.AVAILABLE)
    elif case.held_amount:
        _post(case, LOSS, "Dispute lost, held amount sent to the payer", RETAINED, TO_PAYER)
    if won and transaction.status in DISPUTED_STATUSES:
        _restore(transaction, now)
    elif not won:
        refunds.fail_waiting(transaction, WAITING_REFUND_ENDED)
    _refresh_metadata(transaction, case, now)
    if current_app.config["DISPUTE_OUTCOME_EVENTS"]:
        _record(case, "med_case.updated")
        _record(case, "med.resolved", {"money_outcome": str(outcome)})
    enqueue_after_commit(db.session(), DEFAULT_QUEUE, NOTICE_JOB, case.id)


def _restore(transaction: Transaction, now: datetime) -> None:
    """The charge is paid again (APPROVED for a card), or refunded when merchant refunds
    completed meanwhile cover it; quietly, since no `charge.*` (or payment) event follows
    from a dispute."""
    settled = S_T.APPROVED if transaction.paid_with == payments.CARD else S_T.PAID
    transactions.transition(transaction, settled, at=now, record_events=False)
    if refunded_total(transaction) >= transaction.amount:
        transactions.transition(transaction, S_T.REFUNDED, at=now, record_events=False)


# Evidence


def create_upload(
    account_id: str,
    mode: KeyMode,
    case_id: str,
    *,
    file_name: str,
    file_size: int,
    mime_type: str,
    uploaded_by: EvidenceUploader = EvidenceUploader.MERCHANT,
) -> tuple[DisputeEvidence, UploadTicket]:
    """A pending evidence item and the signed address its bytes go to (900 seconds)."""
    case = get_case(account_id, mode, case_id)
    attachability(case).require()
    name = _checked_file_name(file_name)
    if mime_type not in ALLOWED_TYPES:
        raise InvalidRequest(
            f"mime_type is one of {', '.join(sorted(ALLOWED_TYPES))}.", param="mime_type"
        )
    if not isinstance(file_size, int) or isinstance(file_size, bool):
        raise InvalidRequest("file_size is an integer number of bytes.", param="file_size")
    if not 0 < file_size <= MAX_EVIDENCE_BYTES:
        raise InvalidRequest(
            f"file_size is 1 to {MAX_EVIDENCE_BYTES} bytes (10 MB).", param="file_size"
        )
    storage = evidence_storage()
    if not storage.healthy():
        raise ServiceUnavailable("The document storage is unavailable; retry later.")
    evidence_id = f"{EVIDENCE_PREFIX}{uuid.uuid4().hex}"
    key = f"evidence/{case.id}/{evidence_id}"
    ticket = storage.upload_address(key, mime_type, file_size)
    now = utcnow()
    evidence = DisputeEvidence(
        id=evidence_id,
        case_id=case.id,
        file_name=name,
        file_size=file_size,
        mime_type=mime_type,
        uploaded_by=uploaded_by,
        storage_key=key,
        upload_expires_at=now + timedelta(seconds=ticket.expires_in),
        created_at=now,
    )
    db.session.add(evidence)
    db.session.flush()
    return evidence, ticket


def complete_upload(
    account_id: str, mode: KeyMode, case_id: str, evidence_id: str
) -> DisputeEvidence:
    """Confirm an upload once the storage holds exactly the declared bytes (idempotent)."""
    case = get_case(account_id, mode, case_id)
    evidence = db.session.scalar(
        sa.select(DisputeEvidence)
        .where(DisputeEvidence.id == evidence_id, DisputeEvidence.case_id == case.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if evidence is None:
        raise NotFound("No such evidence.")
    if evidence.uploaded_at is not None:
        return evidence
    storage = evidence_storage()
    stored = _read_storage(storage.stored_size, evidence.storage_key)
    if stored is None:
        expired = utcnow() >= evidence.upload_expires_at
        raise Conflict(
            "The upload address has expired without a file; ask for a new one."
            if expired
            else "No file has been uploaded to the address yet.",
            code="EVIDENCE_NOT_UPLOADED",
        )
    if stored != evidence.file_size:
        raise Conflict(
            f"The stored file is {stored} bytes, not the declared {evidence.file_size}.",
            code="EVIDENCE_SIZE_MISMATCH",
        )
    # A store written to directly (S3) never saw the bytes: read the file's start back.
    head = _read_storage(storage.stored_head, evidence.storage_key) or b""
    if not content_matches_type(head, evidence.mime_type):
        raise Conflict(
            f"The stored file is not {evidence.mime_type}, as declared.",
            code="EVIDENCE_TYPE_MISMATCH",
        )
    evidence.uploaded_at = utcnow()
    case.updated_at = evidence.uploaded_at
    return evidence


T = TypeVar("T")


def _read_storage(read: Callable[[str], T], key: str) -> T:
    """`read(key)` from the evidence storage; its outage is the API's 503."""
    try:
        return read(key)
    except StorageUnavailable as error:
        raise ServiceUnavailable("The document storage is unavailable; retry later.") from error


def list_evidence(account_id: str, mode: KeyMode, case_id: str) -> list[DisputeEvidence]:
    """Confirmed evidence of the case, newest first; unconfirmed items do not exist here."""
    case = get_case(account_id, mode, case_id)
    return list(
        db.session.scalars(
            sa.select(DisputeEvidence)
            .where(DisputeEvidence.case_id == case.id, DisputeEvidence.uploaded_at.is_not(None))
            .order_by(DisputeEvidence.created_at.desc(), DisputeEvidence.id.desc())
        )
    )


def view_url(evidence: DisputeEvidence) -> str:
    """A signed address that shows the file for 5 minutes."""
    return evidence_storage().view_address(evidence.storage_key)


def _checked_file_name(file_name: str) -> str:
    """The name as shown to people: no path, and no control, format (bidi overrides) or
    line-separator characters that could make `exe.pdf` of `fdp.exe`."""
    name = file_name.strip() if isinstance(file_name, str) else ""
    hidden = any(unicodedata.category(char) in HIDDEN_CATEGORIES for char in name)
    if not name or len(name) > MAX_FILE_NAME or hidden or not _SAFE_FILE_NAME.fullmatch(name):
        raise InvalidRequest(
            f"file_name is 1 to {MAX_FILE_NAME} characters, without slashes or control characters.",
            param="file_name",
        )
    return name


# Notices by e-mail


@dataclass(frozen=True)
class Notice:
    """One e-mail due about a case, composed and ready to send."""

    name: str
    recipients: list[str]
    subject: str
    body: str


def due_notices(case_id: str) -> list[Notice]:
    """The case's e-mails not yet sent: `opened`, then `resolved` once it is final."""
    case = db.session.get(DisputeCase, case_id, populate_existing=True)
    if case is None:
        return []
    recipients = accounts.manager_emails(case.account_id)
    due = []
    if case.opened_notice_sent_at is None:
        due.append(Notice("opened", recipients, *_opened_mail(case)))
    if case.is_final and case.resolved_notice_sent_at is None:
        due.append(Notice("resolved", recipients, *_resolved_mail(case)))
    return due


def mark_notice_sent(case_id: str, name: str) -> bool:
    """Record that a notice went out, unless someone recorded it first (False then)."""
    column = NOTICE_COLUMNS[name]
    marked = db.session.execute(
        sa.update(DisputeCase)
        .where(DisputeCase.id == case_id, column.is_(None))
        .values({column: utcnow()})
        .execution_options(synchronize_session=False)
    )
    return marked.rowcount == 1


def cases_with_due_notices(now: datetime | None = None, limit: int = 200) -> list[str]:
    """Cases with an e-mail still due, newest first (one that keeps failing never holds up
    newer ones). Notices younger than NOTICE_GRACE are left to the job that the change
    itself asked for, so the two seldom send the same e-mail."""
    cutoff = (now or utcnow()) - NOTICE_GRACE
    due = sa.or_(
        sa.and_(DisputeCase.opened_notice_sent_at.is_(None), DisputeCase.created_at <= cutoff),
        sa.and_(DisputeCase.resolved_notice_sent_at.is_(None), DisputeCase.closed_at <= cutoff),
    )
    return list(
        db.session.scalars(
            sa.select(DisputeCase.id)
            .where(due)
            .order_by(DisputeCase.created_at.desc(), DisputeCase.id.desc())
            .limit(limit)
        )
    )


def _opened_mail(case: DisputeCase) -> tuple[str, str]:
    deadline = (
        f"Answer before {case.response_deadline:%Y-%m-%d %H:%M} UTC"
        if case.response_deadline
        else "No response deadline was reported"
    )
    held = (
        f"{_money(case.held_amount, case.currency)} is held from your wallet until the decision."
        if case.held_amount
        else "The reported amount differs from the charge's, so nothing was held; our "
        "operations team is reviewing the case."
    )
    return (
        f"Acme Pay: dispute {case.id} opened",
        f"The payer's bank disputed charge {CHARGE_ID_PREFIX}{case.transaction_id} "
        f"({case.type}, {_money(case.amount, case.currency)}). {held}\n\n"
        f"{deadline}: appeal with evidence, or accept, from the dashboard's Disputes page or "
        f"with POST /v1/med/cases/{case.id}/appeal.",
    )


def _resolved_mail(case: DisputeCase) -> tuple[str, str]:
    effect = OUTCOME_EFFECTS[case.money_outcome] if case.held_amount else "nothing had been held"
    return (
        f"Acme Pay: dispute {case.id} {case.status}",
        f"Dispute {case.id} on charge {CHARGE_ID_PREFIX}{case.transaction_id} is {case.status} "
        f"({case.money_outcome}): {effect}.",
    )


def _money(amount: int, currency: str) -> str:
    return f"{currency} {amount // 100}.{amount % 100:02d}"


# Shared steps


def _post(
    case: DisputeCase, kind: str, label: str, source: LedgerAccount, target: LedgerAccount
) -> None:
    ledger.post(
        account_id=case.account_id,
        mode=case.mode,
        currency=case.currency,
        kind=kind,
        reference_id=case.id,
        description=f"{label}: case {case.id} on transaction {case.transaction_id}",
        lines=[Line(source, -case.held_amount), Line(target, case.held_amount)],
    )


def _changed(case: DisputeCase, now: datetime) -> None:
    """A status change or evidence request: the charge's metadata and `med_case.updated`."""
    _refresh_metadata(transactions.lock(case.transaction_id), case, now)
    _record(case, "med_case.updated")


def _refresh_metadata(transaction: Transaction, case: DisputeCase, now: datetime) -> None:
    transaction.metadata_ = {**(transaction.metadata_ or {}), "med": med_metadata(case, now)}


def _record(case: DisputeCase, event_type: str, extra: dict | None = None) -> None:
    db.session.flush()
    record_event(
        case.account_id,
        case.mode,
        event_type,
        {"object": case_object(case)} | (extra or {}),
        subject_type="med_case",
        subject_id=case.id,
    )


def _audit(case: DisputeCase, actor_user_id: str | None, action: str) -> None:
    audit.record(
        account_id=case.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="med_case",
        subject_id=case.id,
    )


def _lock(case_id: str) -> DisputeCase | None:
    """The case, locked after its transaction: refunds lock the transaction first too, so a
    decision and a refund completing at once never deadlock."""
    transaction_id = db.session.scalar(
        sa.select(DisputeCase.transaction_id).where(DisputeCase.id == case_id)
    )
    if transaction_id is None:
        return None
    transactions.lock(transaction_id)
    return db.session.scalar(
        sa.select(DisputeCase)
        .where(DisputeCase.id == case_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
