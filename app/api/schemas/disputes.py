"""Request schemas of the dispute routes (`/v1/med/cases`, its `/v1/infractions` aliases) and
of the sandbox's dispute channel. Every unknown or malformed value is a 400, never ignored."""

import marshmallow as ma

from app.api.schemas.fields import DateBoundParam, QueryArgsSchema, QueryInteger, UtcDateTime
from app.formats.disputes import EvidenceSchema, MedCaseSchema
from app.models import DisputeStatus, DisputeType
from app.services.charges import MAX_AMOUNT
from app.services.disputes import (
    DECISIONS,
    DEFAULT_LIST_LIMIT,
    EXTERNAL_ID,
    MAX_APPEAL,
    MAX_FILE_NAME,
    MAX_LIST_LIMIT,
    MAX_REASON,
    MED_METHODS,
    MIN_APPEAL,
    CaseQuery,
)
from app.storage import ALLOWED_TYPES, MAX_EVIDENCE_BYTES


def _values(kind) -> list[str]:
    return [member.value for member in kind]


class CaseQuerySchema(QueryArgsSchema):
    limit = QueryInteger(
        load_default=DEFAULT_LIST_LIMIT, validate=ma.validate.Range(min=1, max=MAX_LIST_LIMIT)
    )
    starting_after = ma.fields.String(
        metadata={"description": "A med_ id of your own case: the previous next_cursor."}
    )
    status = ma.fields.String(validate=ma.validate.OneOf(_values(DisputeStatus)))
    type = ma.fields.String(validate=ma.validate.OneOf(_values(DisputeType)))
    charge_id = ma.fields.String(metadata={"description": "ch_ id of the contested charge."})
    created_after = DateBoundParam(
        end=False, metadata={"description": "ISO 8601, exclusive; UTC if no zone."}
    )
    created_before = DateBoundParam(
        end=False, metadata={"description": "ISO 8601, exclusive; UTC if no zone."}
    )

    @ma.post_load
    def _to_query(self, data, **kwargs) -> CaseQuery:
        return CaseQuery(**data)


class CaseListSchema(ma.Schema):
    object = ma.fields.String(metadata={"enum": ["list"]})
    data = ma.fields.List(ma.fields.Nested(MedCaseSchema))
    has_more = ma.fields.Boolean()
    next_cursor = ma.fields.String(allow_none=True)


class AppealSchema(ma.Schema):
    reason = ma.fields.String(
        required=True, validate=ma.validate.Length(min=MIN_APPEAL, max=MAX_APPEAL)
    )


class EvidenceTicketRequestSchema(ma.Schema):
    file_name = ma.fields.String(
        required=True, validate=ma.validate.Length(min=1, max=MAX_FILE_NAME)
    )
    file_size = ma.fields.Integer(
        required=True,
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_EVIDENCE_BYTES),
        metadata={"description": "Exact size in bytes; at most 10 MB."},
    )
    mime_type = ma.fields.String(required=True, validate=ma.validate.OneOf(sorted(ALLOWED_TYPES)))


class EvidenceListSchema(ma.Schema):
    object = ma.fields.String(metadata={"enum": ["list"]})
    data = ma.fields.List(ma.fields.Nested(EvidenceSchema))


class SandboxDisputeSchema(ma.Schema):
    """What a payer's bank reports when it opens a dispute (the sandbox's channel)."""

    external_id = ma.fields.String(
        validate=ma.validate.Regexp(EXTERNAL_ID),
        metadata={
            "description": "The notification's id; sending it again returns the same case. "
            "Defaults to one per charge."
        },
    )
    type = ma.fields.String(
        load_default=DisputeType.MED.value, validate=ma.validate.OneOf(_values(DisputeType))
    )
    method = ma.fields.String(
        load_default="scam", allow_none=True, validate=ma.validate.OneOf(MED_METHODS)
    )
    reason = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=MAX_REASON))
    amount = ma.fields.Integer(
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_AMOUNT),
        metadata={"description": "Defaults to the charge amount; another sets amountMismatch."},
    )
    response_deadline = UtcDateTime(
        allow_none=True,
        metadata={"description": "Defaults to 72 hours from now; null when unknown."},
    )
    payer_name = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=140))
    payer_document = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=32))


class SandboxDecisionSchema(ma.Schema):
    decision = ma.fields.String(required=True, validate=ma.validate.OneOf(list(DECISIONS)))
    note = ma.fields.String(allow_none=True, validate=ma.validate.Length(max=500))
