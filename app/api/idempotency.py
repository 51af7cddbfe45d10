"""`@idempotent`: wraps a financial write so a retried request never acts twice.

Place it above the smorest decorators (so it sees the final response) and below the
authentication (so the account is known). The wrapped view flushes its work; this decorator
commits it together with the stored answer, or rolls it back and releases the key.
"""

from functools import wraps
from typing import Literal

from flask import Response, g, make_response, request

from app.extensions import db
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
            if key_source == "header":
                key = idempotency.validate_key(
                    request.headers.get(IDEMPOTENCY_HEADER), IDEMPOTENCY_HEADER
                )
            else:
                body = request.get_json(silent=True)
                if not isinstance(body, dict):
                    return view(*args, **kwargs)  # the view's parser answers the bad body
                key = idempotency.validate_key(body.get(body_field), body_field)
            scope = f"{request.method} {request.path}"
            claimed = idempotency.claim(
                g.account_id, scope, key, idempotency.request_fingerprint(request.get_data())
            )
            if claimed.replay is not None:
                return _replay(claimed.replay)
            return _run_once(claimed.key_id, view, args, kwargs)

        return wrapper

    return decorator


def _run_once(key_id: str, view, args, kwargs) -> Response:
    try:
        response = make_response(view(*args, **kwargs))
    except Exception:
        db.session.rollback()
        idempotency.release(key_id)
        raise
    if 200 <= response.status_code < 300:
        idempotency.complete(key_id, response.status_code, response.get_data(as_text=True))
        db.session.commit()
    else:
        db.session.rollback()
        idempotency.release(key_id)
    return response


def _replay(stored: idempotency.StoredResponse) -> Response:
    response = Response(stored.body, status=stored.status, mimetype="application/json")
    response.headers[REPLAY_HEADER] = "true"
    return response
