"""Pix key pre-flight check (JWT): is this a key a payout could be sent to?

The blueprint is named `pix_keys` although it lives under `/v1/withdrawals`: the name
`withdrawals` belongs to the payout routes. The rules are `app.pix.keys.validate`, the same
function payout creation uses, so this answer and a payout never disagree.
"""

import marshmallow as ma

from app.api.schemas.pix_keys import (
    PixKeyCheckSchema,
    PixKeyValidationSchema,
    StrictCnpjQuerySchema,
)
from app.api.security import JwtView, current_membership
from app.extensions import Blueprint
from app.pix import keys

blp = Blueprint("pix_keys", __name__, url_prefix="/v1/withdrawals", description="Payouts (JWT)")


@blp.route("/validate-pix-key")
class PixKeyValidation(JwtView):
    @blp.arguments(PixKeyValidationSchema)
    @blp.arguments(StrictCnpjQuerySchema, location="query", unknown=ma.RAISE)
    @blp.response(200, PixKeyCheckSchema)
    @blp.errors(400, 401)
    def post(self, body, query):
        """Check a Pix key's format: an invalid key is a 200 answer with `valid: false`."""
        return keys.validate(
            body["key"],
            body["type"],
            strict_cnpj=query["strictCnpj"],
            cnpj_checksum_waiver=current_membership().account.cnpj_checksum_waiver,
        )
