"""`@idempotent`: wraps a financial write so a retried request never acts twice.

Place it above the smorest decorators (so it sees the final response) and below the
authentication (so the account is known). The wrapped view flushes its work; this decorator
commits it together with the stored answer, or rolls it back and releases the key.

Scope: the credential's mode (a live key and a test key never share an answer), the method
and the route rule; the request hash covers the method, the path and the body.
"""

from functools import wraps
from typing import Literal

from flask import Response, g, make_response, request

from app.errors import InvalidRequest
from app.services import idempotency

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAY_HEADER = "Idempotent-Replayed"


def idempotent(
    key_source: Literal["header", "body"] = "header", body_field: str = "idempotencyKey"
):
    """Key from the `Idempotency-Key` header, or from a JSON body field (payments, payouts)."""

    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            claimed = idempotency.claim(
                g.account_id,
                _scope(),
                _presented_key(key_source, body_field),
                idempotency.request_fingerprint(request.method, request.path, request.get_data()),
            )
            if claimed.replay is not None:
                return _replay(claimed.replay)
            return _run_once(claimed, view, args, kwargs)

        return wrapper

    return decorator


def _presented_key(key_source: str, body_field: str) -> str:
    if key_source == "header":
        return idempotency.validate_key(request.headers.get(IDEMPOTENCY_HEADER), IDEMPOTENCY_HEADER)
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return idempotency.validate_key(body.get(body_field), body_field)


def _scope() -> str:
    api_key = g.get("api_key")
    mode = api_key.mode.value if api_key is not None else "dashboard"
    return f"{mode} {request.method} {request.url_rule.rule}"


def _run_once(claimed: idempotency.Claim, view, args, kwargs) -> Response:
    """Run the view; keep its work and answer only if it succeeded and the claim still holds."""

    def work():
        response = make_response(view(*args, **kwargs))
        if 200 <= response.status_code < 300:
            return response, (response.status_code, response.get_data(as_text=True))
        return response, None

    return idempotency.run_once(claimed, work)


def _replay(stored: idempotency.StoredResponse) -> Response:
    response = Response(stored.body, status=stored.status, mimetype="application/json")
    response.headers[REPLAY_HEADER] = "true"
    return response
