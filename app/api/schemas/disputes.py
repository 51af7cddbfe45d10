"""Request schemas of the dispute routes (`/v1/med/cases`, its `/v1/infractions` aliases) and
of the sandbox's dispute channel. Every unknown or malformed value is a 400, never ignored."""

import marshmallow as ma

from app.api.schemas.fields import (
    UUID,
    CursorPageSchema,
    DateBoundParam,
    Pattern,
    QueryArgsSchema,
    QueryInteger,
    Text,
    UtcDateTime,
    trimmed_text,
)
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.disputes import EvidenceSchema, MedCaseSchema
from app.models import DisputeStatus, DisputeType
from app.services.disputes.cases import (
    DECISIONS,
    EXTERNAL_ID,
    MAX_APPEAL,
    MAX_REASON,
    MED_METHODS,
    MIN_APPEAL,
)
from app.services.disputes.evidence import MAX_FILE_NAME
from app.services.disputes.listing import (
    CASE_PREFIX,
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    CaseQuery,
)
from app.services.transactions.charges import MAX_AMOUNT
from app.storage import ALLOWED_TYPES, MAX_EVIDENCE_BYTES

CASE_ID = f"^{CASE_PREFIX}{UUID}$"
# Any charge id, known or not: a filter, not a lookup (an unknown one lists nothing).
CHARGE_FILTER = rf"^{CHARGE_ID_PREFIX}[^\x00]+$"
# Visible characters of whole Unicode blocks with no control, format or unassigned character
# in them (the service refuses those, and ECMA-262 cannot name them without `\p{…}`): ASCII
# but / and \, Latin (Latin-1 without the soft hyphen, Extended-A and -B), Cyrillic,
# punctuation, currency and letterlike symbols, kana, CJK ideographs and Hangul syllables.
_FILE_NAME_CHARACTER = (
    r"!-.0-\[\]-~\u00a1-\u00ac\u00ae-\u024f\u0400-\u04ff\u2010-\u2027\u2030-\u205e"
    r"\u20a0-\u20c0\u2100-\u214f\u3041-\u3096\u30a0-\u30ff\u4e00-\u9fff\uac00-\ud7a3"
)
# Spaces inside, none at either end.
FILE_NAME = rf"^[{_FILE_NAME_CHARACTER}](?:[ {_FILE_NAME_CHARACTER}]*[{_FILE_NAME_CHARACTER}])?$"


def _values(kind) -> list[str]:
    return [member.value for member in kind]


class CaseQuerySchema(QueryArgsSchema):
    limit = QueryInteger(minimum=1, maximum=MAX_LIST_LIMIT, load_default=DEFAULT_LIST_LIMIT)
    starting_after = ma.fields.String(
        validate=Pattern(CASE_ID, error="starting_after takes a case id (med_…)."),
        metadata={"description": "The previous page's next_cursor: one of your cases' ids."},
    )
    status = ma.fields.String(validate=ma.validate.OneOf(_values(DisputeStatus)))
    type = ma.fields.String(validate=ma.validate.OneOf(_values(DisputeType)))
    charge_id = ma.fields.String(
        validate=Pattern(CHARGE_FILTER, error="charge_id takes a charge id (ch_…)."),
        metadata={"description": "ch_ id of the contested charge."},
    )
    created_after = DateBoundParam(
        end=False, metadata={"description": "ISO 8601, exclusive; UTC if no zone."}
    )
    created_before = DateBoundParam(
        end=False, metadata={"description": "ISO 8601, exclusive; UTC if no zone."}
    )

    @ma.post_load
    def _to_query(self, data, **kwargs) -> CaseQuery:
        return CaseQuery(**data)


class CaseListSchema(CursorPageSchema):
    data = ma.fields.List(ma.fields.Nested(MedCaseSchema))


class AppealSchema(ma.Schema):
    reason = ma.fields.String(
        required=True,
        validate=[ma.validate.Length(max=MAX_APPEAL), Pattern(trimmed_text(MIN_APPEAL))],
        metadata={"description": f"At least {MIN_APPEAL} characters besides blanks at the ends."},
    )


class EvidenceTicketRequestSchema(ma.Schema):
    file_name = ma.fields.String(
        required=True,
        validate=[
            ma.validate.Length(max=MAX_FILE_NAME),
            Pattern(FILE_NAME, error="A file name, without slashes or control characters."),
        ],
        metadata={"description": "No path: the name people are shown."},
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
        validate=Pattern(EXTERNAL_ID.pattern),
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
    reason = Text(allow_none=True, validate=ma.validate.Length(max=MAX_REASON))
    amount = ma.fields.Integer(
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_AMOUNT),
        metadata={"description": "Defaults to the charge amount; another sets amountMismatch."},
    )
    response_deadline = UtcDateTime(
        allow_none=True,
        metadata={"description": "Defaults to 72 hours from now; null when unknown."},
    )
    payer_name = Text(allow_none=True, validate=ma.validate.Length(max=140))
    payer_document = Text(allow_none=True, validate=ma.validate.Length(max=32))


class SandboxDecisionSchema(ma.Schema):
    decision = ma.fields.String(required=True, validate=ma.validate.OneOf(list(DECISIONS)))
    note = Text(allow_none=True, validate=ma.validate.Length(max=500))
