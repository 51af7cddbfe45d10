"""Dashboard login and logout over the API: a JWT for `/v1/api-keys*` and `/v1/withdrawals*`."""

from flask import g, request
from flask.views import MethodView

from app.api.schemas.auth import LoginSchema, TokenSchema
from app.api.security import JwtView
from app.extensions import Blueprint, db
from app.models.base import utcnow
from app.services import auth, login_throttle

blp = Blueprint("auth", __name__, url_prefix="/v1/auth", description="Dashboard sessions (JWT)")


@blp.route("/login")
class Login(MethodView):
    @blp.arguments(LoginSchema)
    @blp.response(200, TokenSchema)
    @blp.errors(401, 429)
    def post(self, data):
        """Exchange e-mail and password for a JWT scoped to one account (or, for platform
        staff without an account, a staff token for the admin routes).

        After repeated failures for the e-mail or from the address, attempts are refused with
        429 `rate_limited` and `Retry-After` (seconds) without checking the password."""
        with login_throttle.guard(data["email"], request.remote_addr):
            issued = auth.login(data["email"], data["password"], data["accountId"])
        db.session.commit()  # keeps a password hash upgraded at login
        membership = issued.membership
        return {
            "token": issued.token,
            "expiresAt": issued.expires_at,
            "expiresIn": int((issued.expires_at - utcnow()).total_seconds()),
            "role": str(membership.role) if membership else auth.STAFF_ROLE,
            "account": membership.account if membership else None,
            "user": issued.user,
        }


@blp.route("/logout")
class Logout(JwtView):
    @blp.response(204)
    @blp.errors(401)
    def post(self):
        """End this token now; later calls with it get 401."""
        auth.revoke_token(g.token_claims)
        db.session.commit()
