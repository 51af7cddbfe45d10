"""Dispute cases (apikey): list, read, appeal, accept and evidence in three steps, served at
`/v1/med/cases` and, identically, at the `/v1/infractions` aliases; and the sandbox's dispute
channel (open a case on a paid test charge, request evidence, decide).

A caller only ever sees its own cases: every id outside its account and mode is a 404.
"""

import marshmallow as ma
from flask import g

from app.api.caller import committed_for_caller, sandbox_mode
from app.api.pages import cursor_page
from app.api.schemas.disputes import (
    AppealSchema,
    CaseListSchema,
    CaseQuerySchema,
    EvidenceListSchema,
    EvidenceTicketRequestSchema,
    SandboxDecisionSchema,
    SandboxDisputeSchema,
)
from app.api.security import ApiKeyView
from app.extensions import Blueprint, db
from app.formats.disputes import (
    EvidenceSchema,
    MedCaseSchema,
    UploadTicketSchema,
    evidence_fields,
    med_case_fields,
    upload_ticket_fields,
)
from app.models import DisputeCase, KeyMode
from app.services import simulated_payer
from app.services.disputes import cases, listing
from app.services.disputes import evidence as dispute_evidence
from app.services.transactions import charges

CASE_ROUTE_PREFIXES = {
    "med_cases": "/v1/med/cases",
    "infractions": "/v1/infractions",
    "infraction_cases": "/v1/infractions/cases",
}


def _case_blueprint(name: str, prefix: str) -> Blueprint:
    """One blueprint of the case routes; the aliases are the same views under other paths."""
    alias = "" if prefix == CASE_ROUTE_PREFIXES["med_cases"] else " (alias of /v1/med/cases)"
    blp = Blueprint(name, __name__, url_prefix=prefix, description=f"Dispute cases{alias}")

    @blp.route("")
    class Cases(ApiKeyView):
        @blp.arguments(CaseQuerySchema, location="query", unknown=ma.RAISE)
        @blp.response(200, CaseListSchema)
        @blp.errors(400, 401)
        def get(self, query):
            """List your dispute cases, newest first, with cursor pagination."""
            page = listing.list_cases(g.account_id, g.api_key.mode, query)
            counts = listing.evidence_counts([case.id for case in page.data])
            return cursor_page(page, [med_case_fields(case, counts[case.id]) for case in page.data])

    @blp.route("/<case_id>")
    class CaseById(ApiKeyView):
        @blp.response(200, MedCaseSchema)
        @blp.errors(401, 404)
        def get(self, case_id):
            """Read one of your dispute cases."""
            return _case(listing.get_case(g.account_id, g.api_key.mode, case_id))

    @blp.route("/<case_id>/appeal")
    class Appeal(ApiKeyView):
        @blp.arguments(AppealSchema)
        @blp.response(200, MedCaseSchema)
        @blp.errors(400, 401, 404)
        def post(self, body, case_id):
            """Contest an open case (reason 5-2000 characters); the amount stays held."""
            return _case(committed_for_caller(cases.appeal, case_id, body["reason"]))

    @blp.route("/<case_id>/accept")
    class Accept(ApiKeyView):
        @blp.response(200, MedCaseSchema)
        @blp.errors(400, 401, 404, 409)
        def post(self, case_id):
            """Accept an open case: final, money outcome `lost`."""
            return _case(committed_for_caller(cases.accept, case_id))

    @blp.route("/<case_id>/evidence")
    class Evidence(ApiKeyView):
        @blp.response(200, EvidenceListSchema)
        @blp.errors(401, 404, 503)
        def get(self, case_id):
            """Confirmed evidence of the case, newest first, each with a 5-minute view_url."""
            items = dispute_evidence.list_evidence(g.account_id, g.api_key.mode, case_id)
            return {
                "object": "list",
                "data": [evidence_fields(item, dispute_evidence.view_url(item)) for item in items],
            }

        @blp.arguments(EvidenceTicketRequestSchema)
        @blp.response(201, UploadTicketSchema)
        @blp.errors(400, 401, 404, 409, 503)
        def post(self, body, case_id):
            """Step 1 of 3: a signed address to PUT the file to, with exactly these headers
            and no API credentials, within 900 seconds."""
            evidence, ticket = committed_for_caller(dispute_evidence.create_upload, case_id, **body)
            return upload_ticket_fields(evidence, ticket)

    @blp.route("/<case_id>/evidence/<evidence_id>/complete")
    class CompleteEvidence(ApiKeyView):
        @blp.response(200, EvidenceSchema)
        @blp.errors(401, 404, 409, 503)
        def post(self, case_id, evidence_id):
            """Step 3 of 3: confirm the upload (idempotent); 409 EVIDENCE_NOT_UPLOADED or
            EVIDENCE_SIZE_MISMATCH when the storage does not hold the declared file."""
            evidence = committed_for_caller(dispute_evidence.complete_upload, case_id, evidence_id)
            return evidence_fields(evidence, dispute_evidence.view_url(evidence))

    return blp


case_blueprints = tuple(
    _case_blueprint(name, prefix) for name, prefix in CASE_ROUTE_PREFIXES.items()
)

sandbox_disputes_blp = Blueprint(
    "sandbox_disputes",
    __name__,
    url_prefix="/v1/sandbox",
    description="Sandbox dispute channel (test-mode keys only)",
)


@sandbox_disputes_blp.route("/charges/<charge_id>/dispute")
class SandboxDispute(ApiKeyView):
    @sandbox_disputes_blp.arguments(SandboxDisputeSchema, required=False)
    @sandbox_disputes_blp.response(201, MedCaseSchema)
    @sandbox_disputes_blp.alt_response(200, schema=MedCaseSchema, description="Re-delivery.")
    @sandbox_disputes_blp.errors(400, 401, 404, 409)
    def post(self, report, charge_id):
        """The payer's bank disputes a paid test charge; the same notification again (same
        external_id) returns its case with 200."""
        charge = charges.get_charge(g.account_id, _test_mode(), charge_id)
        case, created = simulated_payer.open_dispute(charge, report)
        db.session.commit()
        return _case(case), 201 if created else 200


@sandbox_disputes_blp.route("/med/cases/<case_id>/request-evidence")
class SandboxEvidenceRequest(ApiKeyView):
    @sandbox_disputes_blp.response(200, MedCaseSchema)
    @sandbox_disputes_blp.errors(401, 404, 409)
    def post(self, case_id):
        """The platform asks for evidence on a test case (`evidence_requested_at`)."""
        case = listing.get_case(g.account_id, _test_mode(), case_id)
        case = cases.request_evidence(case.id)
        db.session.commit()
        return _case(case)


@sandbox_disputes_blp.route("/med/cases/<case_id>/decision")
class SandboxDecision(ApiKeyView):
    @sandbox_disputes_blp.arguments(SandboxDecisionSchema)
    @sandbox_disputes_blp.response(200, MedCaseSchema)
    @sandbox_disputes_blp.errors(400, 401, 404, 409)
    def post(self, body, case_id):
        """The dispute channel decides a test case: rejected (lost), refunded_to_merchant
        or closed_without_refund."""
        case = listing.get_case(g.account_id, _test_mode(), case_id)
        case = cases.decide(case.id, body["decision"], note=body.get("note"))
        db.session.commit()
        return _case(case)


def _case(case: DisputeCase) -> dict:
    return med_case_fields(case, listing.evidence_counts([case.id])[case.id])


def _test_mode() -> KeyMode:
    return sandbox_mode("The sandbox answers test-mode keys only.")
