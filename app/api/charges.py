"""Pix charges (apikey): create (`/v1/charges` and the `/v1/pix/charges` shortcut), get, list;
the public payload and QR image behind a dynamic BR Code's location (`/v1/qr/<id>`, and
`/v1/pix/locations/<id>` for codes issued before it); the sandbox payment.
"""

from datetime import date

import marshmallow as ma
from flask import Response, g
from flask.views import MethodView

from app.api.caller import committed_for_caller, sandbox_mode
from app.api.idempotency import IDEMPOTENCY_HEADER, idempotent
from app.api.pages import cursor_page
from app.api.schemas.charges import (
    ChargeCreateSchema,
    ChargeListSchema,
    ChargeQuerySchema,
    LocationQuerySchema,
    PixChargeCreateSchema,
    SandboxPaymentSchema,
)
from app.api.security import ApiKeyView
from app.errors import NotFound
from app.extensions import Blueprint, db
from app.formats.charges import ChargeSchema
from app.formats.locations import location_payload
from app.models import Account
from app.pix import locations, qr
from app.services import simulated_payer
from app.services.transactions import charges
from app.services.transactions.charges import ChargeQuery

IDEMPOTENCY_PARAMETER = {
    "in": "header",
    "name": IDEMPOTENCY_HEADER,
    "required": True,
    "schema": {"type": "string", "minLength": 8, "maxLength": 128},
    "description": "Required; a retry with the same key returns the first answer.",
}
CREATE_DOC = {"parameters": [IDEMPOTENCY_PARAMETER]}

blp = Blueprint("charges", __name__, url_prefix="/v1/charges", description="Pix charges (apikey)")
pix_blp = Blueprint("pix", __name__, url_prefix="/v1/pix", description="Pix shortcut and codes")
location_blp = Blueprint(
    "locations", __name__, url_prefix="/v1/qr", description="Pix code locations (public)"
)
sandbox_blp = Blueprint(
    "sandbox", __name__, url_prefix="/v1/sandbox", description="Sandbox (test-mode keys only)"
)


def _create(new: charges.NewCharge):
    return charges.create_charge(g.account_id, g.api_key.mode, new, terms=g.api_key.account)


@blp.route("")
class Charges(ApiKeyView):
    @blp.doc(**CREATE_DOC)
    @idempotent("header")
    @blp.arguments(ChargeCreateSchema)
    @blp.response(201, ChargeSchema)
    @blp.errors(400, 401, 403, 409, 422, 503)
    def post(self, new):
        """Create a Pix charge: the answer carries the BR Code, QR and checkout address."""
        return _create(new)

    @blp.arguments(ChargeQuerySchema, location="query", unknown=ma.RAISE)
    @blp.response(200, ChargeListSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """List charges, newest first, with cursor pagination."""
        page = charges.list_charges(g.account_id, g.api_key.mode, ChargeQuery(**query))
        db.session.commit()  # charges found expired on read
        return cursor_page(page, page.data)


@blp.route("/<charge_id>")
class ChargeById(ApiKeyView):
    @blp.response(200, ChargeSchema)
    @blp.errors(401, 404)
    def get(self, charge_id):
        """Read a charge by its ch_ id or raw id."""
        return committed_for_caller(charges.read_charge, charge_id)


@pix_blp.route("/charges")
class PixCharges(ApiKeyView):
    @pix_blp.doc(**CREATE_DOC)
    @idempotent("header")
    @pix_blp.arguments(PixChargeCreateSchema)
    @pix_blp.response(201, ChargeSchema)
    @pix_blp.errors(400, 401, 403, 409, 422)
    def post(self, new):
        """Create a Pix charge (shortcut: payment_method is pix)."""
        return _create(new)


@pix_blp.route("/locations/<location_id>")
class PixLocation(MethodView):
    @pix_blp.doc(security=[])
    @pix_blp.response(200)
    @pix_blp.errors(400, 404)
    @pix_blp.arguments(LocationQuerySchema, location="query")
    def get(self, query, location_id):
        """The payload behind a dynamic BR Code issued before `/v1/qr/{code_id}` (no
        credentials: payers' banks read it)."""
        return _payload_at(location_id, query.get("DPP"))


@location_blp.route("/<code_id>")
class PixCodeLocation(MethodView):
    @location_blp.doc(security=[])
    @location_blp.response(200)
    @location_blp.errors(400, 404)
    @location_blp.arguments(LocationQuerySchema, location="query")
    def get(self, query, code_id):
        """The payload behind a dynamic BR Code (no credentials: payers' banks read it); for
        a charge with a due date, its amounts on the payer's intended day (`DPP`)."""
        return _payload_at(locations.location_id(code_id), query.get("DPP"))


@pix_blp.route("/locations/<location_id>/qr.png")
class PixQrImage(MethodView):
    @pix_blp.doc(security=[])
    @pix_blp.response(200, content_type="image/png")
    @pix_blp.errors(404)
    def get(self, location_id):
        """The QR code of a charge's BR Code, as a PNG image."""
        charge = _located(location_id)
        db.session.commit()
        response = Response(qr.png(charge.pix_br_code), mimetype="image/png")
        response.headers["Cache-Control"] = "public, max-age=86400, immutable"
        return response


def _payload_at(location_id: str | None, intended_day: date | None) -> dict:
    charge = _located(location_id)
    db.session.commit()
    day = charges.payment_day(charge, intended_day)
    return location_payload(charge, db.session.get(Account, charge.account_id), day)


def _located(location_id: str | None):
    charge = charges.find_by_location(location_id) if location_id else None
    if charge is None:
        raise NotFound("No Pix code at this location.")
    return charge


@sandbox_blp.route("/charges/<charge_id>/pay")
class SandboxPayment(ApiKeyView):
    @sandbox_blp.arguments(SandboxPaymentSchema, required=False)
    @sandbox_blp.response(200, ChargeSchema)
    @sandbox_blp.errors(400, 401, 404)
    def post(self, payment, charge_id):
        """Simulate the payer's bank paying a test-mode charge (test-mode keys only)."""
        charge = charges.get_charge(g.account_id, sandbox_mode("No such charge."), charge_id)
        simulated_payer.simulate_payment(charge, **payment)
        db.session.commit()
        return charge
