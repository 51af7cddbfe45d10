"""The public dispute objects (`med_case`, `med_case_evidence`, `med_case_evidence_upload`)
and the informative `metadata.med` block of a disputed charge, each from an allowlist.

Webhook events carry exactly what the API returns: `med_case_object` is used by both.
"""

from datetime import datetime

import marshmallow as ma

from app.formats.charges import CHARGE_ID_PREFIX
from app.models import DisputeCase, DisputeEvidence, DisputeStatus, MoneyOutcome
from app.storage import UploadTicket

# metadata.med vocabulary (the DICT infraction states as PSPs report them).
MED_STATUS = {
    DisputeStatus.OPEN: "created",
    DisputeStatus.APPEALED: "delivered",
    DisputeStatus.ACCEPTED: "closed",
    DisputeStatus.REJECTED: "closed",
    DisputeStatus.CLOSED: "closed",
}
MED_RESULT = {
    MoneyOutcome.LOST: "agreed",
    MoneyOutcome.CLOSED_WITHOUT_REFUND: "agreed",
    MoneyOutcome.REFUNDED_TO_MERCHANT: "disagreed",
}


class MedCaseSchema(ma.Schema):
    id = ma.fields.String(metadata={"description": "med_<uuid>"})
    object = ma.fields.String(metadata={"enum": ["med_case"]})
    type = ma.fields.String(metadata={"enum": ["med", "chargeback", "dispute", "fraud"]})
    status = ma.fields.String(
        metadata={"enum": ["open", "appealed", "accepted", "rejected", "closed"]}
    )
    amount = ma.fields.Integer(metadata={"description": "Contested amount, smallest unit."})
    currency = ma.fields.String()
    charge_id = ma.fields.String(metadata={"description": "ch_ id of the contested charge."})
    reason = ma.fields.String(allow_none=True)
    response_deadline = ma.fields.DateTime(allow_none=True)
    evidence_requested_at = ma.fields.DateTime(allow_none=True)
    appeal_reason = ma.fields.String(allow_none=True)
    appealed_at = ma.fields.DateTime(allow_none=True)
    evidence_count = ma.fields.Integer(metadata={"description": "Confirmed uploads only."})
    money_outcome = ma.fields.String(
        allow_none=True,
        metadata={"enum": ["refunded_to_merchant", "closed_without_refund", "lost", None]},
    )
    opened_at = ma.fields.DateTime()
    closed_at = ma.fields.DateTime(allow_none=True)
    created_at = ma.fields.DateTime()
    updated_at = ma.fields.DateTime()


class EvidenceSchema(ma.Schema):
    id = ma.fields.String()
    object = ma.fields.String(metadata={"enum": ["med_case_evidence"]})
    file_name = ma.fields.String()
    file_size = ma.fields.Integer()
    mime_type = ma.fields.String()
    uploaded_by = ma.fields.String(metadata={"enum": ["merchant", "partner", "platform"]})
    created_at = ma.fields.DateTime()
    uploaded_at = ma.fields.DateTime()
    view_url = ma.fields.String(metadata={"description": "Signed download link, 5 minutes."})


class UploadTicketSchema(ma.Schema):
    id = ma.fields.String(metadata={"description": "The evidence id to complete."})
    object = ma.fields.String(metadata={"enum": ["med_case_evidence_upload"]})
    upload_url = ma.fields.String()
    upload_method = ma.fields.String(metadata={"enum": ["PUT"]})
    upload_headers = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.String(),
        metadata={"description": "Send exactly these: Content-Type and Content-Length."},
    )
    expires_in = ma.fields.Integer(metadata={"description": "Seconds (900)."})


def med_case_fields(case: DisputeCase, evidence_count: int) -> dict:
    return {
        "id": case.id,
        "object": "med_case",
        "type": str(case.type),
        "status": str(case.status),
        "amount": case.amount,
        "currency": case.currency,
        "charge_id": CHARGE_ID_PREFIX + case.transaction_id,
        "reason": case.reason,
        "response_deadline": case.response_deadline,
        "evidence_requested_at": case.evidence_requested_at,
        "appeal_reason": case.appeal_reason,
        "appealed_at": case.appealed_at,
        "evidence_count": evidence_count,
        "money_outcome": str(case.money_outcome) if case.money_outcome else None,
        "opened_at": case.opened_at,
        "closed_at": case.closed_at,
        "created_at": case.created_at,
        "updated_at": case.updated_at,
    }


# One instance for every dump: building a schema copies its fields, and its nested schemas
# are built on first use; dumping leaves the instance unchanged.
_MED_CASE_SCHEMA = MedCaseSchema()


def med_case_object(case: DisputeCase, evidence_count: int) -> dict:
    """The public case as JSON-ready data (the API answer and the events' `data.object`)."""
    return _MED_CASE_SCHEMA.dump(med_case_fields(case, evidence_count))


def evidence_fields(evidence: DisputeEvidence, view_url: str) -> dict:
    return {
        "id": evidence.id,
        "object": "med_case_evidence",
        "file_name": evidence.file_name,
        "file_size": evidence.file_size,
        "mime_type": evidence.mime_type,
        "uploaded_by": str(evidence.uploaded_by),
        "created_at": evidence.created_at,
        "uploaded_at": evidence.uploaded_at,
        "view_url": view_url,
    }


def upload_ticket_fields(evidence: DisputeEvidence, ticket: UploadTicket) -> dict:
    return {
        "id": evidence.id,
        "object": "med_case_evidence_upload",
        "upload_url": ticket.url,
        "upload_method": ticket.method,
        "upload_headers": dict(ticket.headers),
        "expires_in": ticket.expires_in,
    }


def med_metadata(case: DisputeCase, processed_at: datetime) -> dict:
    """The charge's informative `metadata.med` block for this case, as of `processed_at`."""
    block = {
        "caseId": case.id,
        "referenceId": case.reference_id,
        "status": MED_STATUS[case.status],
        "method": case.method,
        "reason": case.reason,
        "payerName": case.payer_name,
        "payerDocument": case.payer_document,
        "openedAt": _iso(case.opened_at),
        "updatedAt": _iso(case.updated_at),
        "closedAt": _iso(case.closed_at),
        "lastEventAt": _iso(processed_at),
        "amountMismatch": case.amount_mismatch,
    }
    if case.money_outcome:
        block["result"] = MED_RESULT[case.money_outcome]
    return {key: value for key, value in block.items() if value is not None}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
