"""Authentication for API routes: `apikey` for merchant servers, Bearer JWT for dashboard users.

Each decorator puts the caller's account on `flask.g` (`account_id`, plus `api_key` or
`membership`) so views and services scope every query to it. The OpenAPI security schemes
are declared here too, with a view base per credential (`ApiKeyView`, `JwtView`,
`StaffJwtView`), so the document says which routes need which credential.
"""

from functools import wraps
from typing import ClassVar

from flask import after_this_request, g, request
from flask.views import MethodView, http_method_funcs

from app.errors import Unauthorized
from app.models import Membership
from app.services import api_access, auth

API_KEY_HEADER = "apikey"
SECURITY_SCHEMES = {
    "apikey": {"type": "apiKey", "in": "header", "name": API_KEY_HEADER},
    "jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
}
API_KEY_SECURITY = [{"apikey": []}]
JWT_SECURITY = [{"jwt": []}]


def require_api_key(view):
    """Let the request through only with an active API key, sent exactly, within the key's
    and its account's rate limits; every answer then says how much of the limit is left."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        key, allowance = api_access.admit(request.headers.get(API_KEY_HEADER))
        g.api_key = key
        g.api_key_fingerprint = key.fingerprint
        g.account_id = key.account_id
        if allowance is not None:

            @after_this_request
            def add_rate_limit_headers(response):
                response.headers.update(allowance.headers)
                return response

        return view(*args, **kwargs)

    return wrapper


class _GuardedView(MethodView):
    """A view every method of which needs one credential: `decorators` checks it and its
    OpenAPI operations name `security`, declared once per view instead of per method."""

    security: ClassVar[list[dict]] = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in http_method_funcs & cls.__dict__.keys():
            _document_security(getattr(cls, name), cls.security)


def _document_security(operation, security: list[dict]) -> None:
    """Put `security` first in the operation's manual OpenAPI doc (flask-smorest's `_apidoc`),
    where an outermost `@blp.doc(security=…)` put it, so the document keeps its key order."""
    apidoc = getattr(operation, "_apidoc", {})
    manual_doc = {"security": security, **apidoc.get("manual_doc", {})}
    operation._apidoc = {**apidoc, "manual_doc": manual_doc}


class ApiKeyView(_GuardedView):
    """A view for merchant servers: every method needs an API key (`require_api_key`)."""

    decorators = [require_api_key]
    security = API_KEY_SECURITY


def require_jwt(view):
    """Let the request through only with a valid, unrevoked dashboard JWT."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        identity = auth.authenticate_token(_bearer_token())
        g.membership = identity.membership
        g.token_claims = identity.claims
        g.account_id = identity.membership.account_id
        return view(*args, **kwargs)

    return wrapper


def require_staff_jwt(view):
    """Let the request through only with a valid token of an active platform staff user."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        g.staff_user = auth.authenticate_staff_token(_bearer_token())
        return view(*args, **kwargs)

    return wrapper


def _bearer_token() -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Missing or invalid bearer token.")
    return token


class JwtView(_GuardedView):
    """A view for dashboard users: every method needs their JWT (`require_jwt`)."""

    decorators = [require_jwt]
    security = JWT_SECURITY


class StaffJwtView(_GuardedView):
    """A view for platform staff: every method needs a staff JWT (`require_staff_jwt`)."""

    decorators = [require_staff_jwt]
    security = JWT_SECURITY


def current_membership() -> Membership:
    return g.membership
