"""API keys over the API (JWT): list, issue, rotate, revoke for the caller's account."""

from app.api.schemas.api_keys import (
    ApiKeyCreateSchema,
    ApiKeyListSchema,
    ApiKeyRotateSchema,
    IssuedApiKeySchema,
    RevokedSchema,
)
from app.api.security import JwtView, current_membership
from app.extensions import Blueprint, db
from app.models import KeyMode
from app.services import api_keys

blp = Blueprint("api_keys", __name__, url_prefix="/v1/api-keys", description="API keys (JWT)")


@blp.route("")
class ApiKeys(JwtView):
    @blp.response(200, ApiKeyListSchema)
    @blp.errors(401)
    def get(self):
        """List the account's keys (metadata only) and whether the caller may manage them."""
        membership = current_membership()
        return {
            "data": api_keys.list_keys(membership.account_id),
            "access": {"canManage": membership.can_manage_api_keys},
        }

    @blp.arguments(ApiKeyCreateSchema, required=False)
    @blp.response(201, IssuedApiKeySchema)
    @blp.errors(401, 403)
    def post(self, data):
        """Issue a key; its cleartext is in this answer only."""
        mode = KeyMode.TEST if data["test"] else KeyMode.LIVE
        issued = api_keys.issue(current_membership(), label=data["label"], mode=mode)
        db.session.commit()
        return issued


@blp.route("/<key_id>/rotate")
class ApiKeyRotation(JwtView):
    @blp.arguments(ApiKeyRotateSchema, required=False)
    @blp.response(201, IssuedApiKeySchema)
    @blp.errors(401, 403, 404)
    def post(self, data, key_id):
        """Replace a key: the old one is dead when this returns; mode and label carry over."""
        issued = api_keys.rotate(current_membership(), key_id, label=data.get("label"))
        db.session.commit()
        return issued


@blp.route("/<key_id>")
class ApiKeyById(JwtView):
    @blp.response(200, RevokedSchema)
    @blp.errors(401, 403, 404)
    def delete(self, key_id):
        """Revoke a key for good."""
        api_keys.revoke(current_membership(), key_id)
        db.session.commit()
        return {"revoked": True}
