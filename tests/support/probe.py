"""Routes that exist only in the test app, to drive shared mechanisms through real HTTP.

No merchant route of the foundation uses API-key authentication or the idempotency store yet
(charges and payments do); these probes call the same decorators those routes use.
"""

import threading
import time

from flask import Blueprint, g, jsonify, request

from app.api.idempotency import idempotent
from app.api.security import require_api_key
from app.errors import InvalidRequest
from app.extensions import db
from app.services.events import record_event

bp = Blueprint("test_probe", __name__, url_prefix="/v1/test-probe")
in_flight = threading.Event()


@bp.get("/whoami")
@require_api_key
def whoami():
    return jsonify(accountId=g.account_id, mode=str(g.api_key.mode))


@bp.post("/writes")
@require_api_key
@idempotent("header")
def header_keyed_write():
    return _write()


@bp.post("/body-writes")
@require_api_key
@idempotent("body")
def body_keyed_write():
    return _write()


def _write():
    """Records one event (the observable effect), then fails or answers as asked."""
    body = request.get_json()
    event = record_event(
        g.account_id, g.api_key.mode, "probe.written", {"amount": body.get("amount")}
    )
    db.session.flush()
    if body.get("pause"):
        in_flight.set()
        time.sleep(body["pause"])
    if body.get("fail") == "validation":
        raise InvalidRequest("Refused on purpose.", param="fail")
    if body.get("fail") == "crash":
        raise RuntimeError("secret internal detail")
    return jsonify(id=event.id, amount=body.get("amount")), 201


@bp.get("/crash")
def crash():
    raise RuntimeError("secret internal detail")
