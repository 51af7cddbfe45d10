"""Liveness and readiness probes for load balancers and process managers."""

import time

import marshmallow as ma
import sqlalchemy as sa
from flask import current_app
from flask.views import MethodView
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from app.extensions import Blueprint, db, get_redis
from app.storage import evidence_storage

blp = Blueprint("health", __name__, description="Health checks (no authentication)")
STORAGE_HEALTH = "acme_evidence_storage_health"
STORAGE_CHECK_SECONDS = 30


class LivenessSchema(ma.Schema):
    status = ma.fields.String(metadata={"example": "ok"})


class ReadinessSchema(ma.Schema):
    status = ma.fields.String(
        metadata={
            "enum": ["ready", "degraded", "unavailable"],
            "description": "`degraded`: serving, but dispute evidence cannot be stored.",
        }
    )
    checks = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.String(metadata={"enum": ["ok", "unreachable"]}),
        metadata={"description": "One entry per dependency: database, redis, evidence_storage."},
    )


@blp.route("/healthz")
class Liveness(MethodView):
    @blp.response(200, LivenessSchema)
    def get(self):
        """The process is up and serving requests."""
        return {"status": "ok"}


@blp.route("/readyz")
class Readiness(MethodView):
    @blp.response(200, ReadinessSchema)
    @blp.alt_response(503, schema=ReadinessSchema, description="A dependency is unreachable.")
    def get(self):
        """503 when the database or Redis does not answer. The evidence storage is reported
        but only degrades readiness: taking every instance out of rotation because dispute
        evidence cannot be stored would stop payments too."""
        required = {"database": _database_ok(), "redis": _redis_ok()}
        checks = required | {"evidence_storage": _evidence_storage_ok()}
        ready = all(required.values())
        status = "unavailable" if not ready else "ready" if all(checks.values()) else "degraded"
        body = {
            "status": status,
            "checks": {name: "ok" if ok else "unreachable" for name, ok in checks.items()},
        }
        return body, 200 if ready else 503


def _evidence_storage_ok() -> bool:
    """The storage's health as last checked, at most STORAGE_CHECK_SECONDS ago: a probe
    must answer fast, and must not make this service call the store on every request."""
    checked_at, ok = current_app.extensions.get(STORAGE_HEALTH, (None, True))
    now = time.monotonic()
    if checked_at is None or now - checked_at >= STORAGE_CHECK_SECONDS:
        ok = evidence_storage().healthy()
        current_app.extensions[STORAGE_HEALTH] = (now, ok)
    return ok


def _database_ok() -> bool:
    try:
        db.session.execute(sa.text("SELECT 1"))
        return True
    except SQLAlchemyError:
        db.session.rollback()
        return False


def _redis_ok() -> bool:
    try:
        return bool(get_redis().ping())
    except RedisError:
        return False
