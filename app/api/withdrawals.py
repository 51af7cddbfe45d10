"""Payouts (wire name: withdrawals), JWT: request, list, read and cancel for the caller's
account; and the admin routes where platform staff approve or reject pending payouts. A payout
id in a path is a UUID (`<uuid:…>`), so `/v1/withdrawals/validate-pix-key` never reads as one:
an OPTIONS there allows only the POST it serves."""

from dataclasses import replace

from flask import g

from app.api.idempotency import idempotent
from app.api.pages import numbered_page
from app.api.schemas.pix_keys import StrictCnpjQuerySchema
from app.api.schemas.withdrawals import (
    RejectionSchema,
    WithdrawalCreateSchema,
    WithdrawalPageSchema,
    WithdrawalQuerySchema,
)
from app.api.security import JwtView, StaffJwtView, current_membership
from app.extensions import Blueprint, db
from app.formats.payouts import PayoutSchema
from app.models import KeyMode
from app.services.payouts import decisions, listing, requesting

blp = Blueprint("withdrawals", __name__, url_prefix="/v1/withdrawals", description="Payouts (JWT)")
admin_blp = Blueprint(
    "admin", __name__, url_prefix="/v1/admin", description="Platform staff (staff JWT)"
)


@blp.route("")
class Withdrawals(JwtView):
    @idempotent("body")
    @blp.arguments(WithdrawalCreateSchema)
    @blp.arguments(StrictCnpjQuerySchema, location="query", unknown="raise")
    @blp.response(201, PayoutSchema)
    @blp.errors(400, 401, 403, 409, 422)
    def post(self, new, query):
        """Request a payout: PENDING until approved; nothing is debited yet (OWNER or ADMIN)."""
        new = replace(new, strict_cnpj=query["strictCnpj"])
        return requesting.request_payout(current_membership(), new)

    @blp.arguments(WithdrawalQuerySchema, location="query", unknown="raise")
    @blp.response(200, WithdrawalPageSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """List the account's payouts, newest first, a page at a time."""
        mode = KeyMode(query["mode"]) if "mode" in query else None
        rows, total = listing.list_payouts(
            g.account_id, mode, query.get("status"), query["page"], query["limit"]
        )
        return numbered_page(rows, total, query)


@blp.route("/<uuid:withdrawal_id>")
class WithdrawalById(JwtView):
    @blp.response(200, PayoutSchema)
    @blp.errors(401, 404)
    def get(self, withdrawal_id):
        """Read one payout of the account."""
        return listing.get(g.account_id, str(withdrawal_id))


@blp.route("/<uuid:withdrawal_id>/cancel")
class WithdrawalCancellation(JwtView):
    @blp.response(200, PayoutSchema)
    @blp.errors(401, 403, 404, 409)
    def post(self, withdrawal_id):
        """Cancel a payout while it is PENDING (never debited, so nothing moves)."""
        withdrawal = requesting.cancel(current_membership(), str(withdrawal_id))
        db.session.commit()
        return withdrawal


@admin_blp.route("/withdrawals")
class PendingWithdrawals(StaffJwtView):
    @admin_blp.response(200, PayoutSchema(many=True))
    @admin_blp.errors(401)
    def get(self):
        """Payouts of every account waiting for approval, oldest first."""
        return listing.pending_review()


@admin_blp.route("/withdrawals/<uuid:withdrawal_id>/approve")
class WithdrawalApproval(StaffJwtView):
    @admin_blp.response(200, PayoutSchema)
    @admin_blp.errors(401, 404, 409)
    def post(self, withdrawal_id):
        """Approve: debits amount + fee now (409 if the balance no longer covers them)."""
        withdrawal = decisions.approve(str(withdrawal_id), g.staff_user.id)
        db.session.commit()
        return withdrawal


@admin_blp.route("/withdrawals/<uuid:withdrawal_id>/reject")
class WithdrawalRejection(StaffJwtView):
    @admin_blp.arguments(RejectionSchema, required=False)
    @admin_blp.response(200, PayoutSchema)
    @admin_blp.errors(400, 401, 404, 409)
    def post(self, body, withdrawal_id):
        """Reject a pending payout; it was never debited."""
        withdrawal = decisions.reject(str(withdrawal_id), g.staff_user.id, body.get("reason"))
        db.session.commit()
        return withdrawal
