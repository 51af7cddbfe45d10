"""Prometheus metrics at GET /metrics: HTTP traffic, RQ queues, jobs, webhooks and the outbox.

Per-process series (HTTP requests) come from this process, or from every gunicorn worker's
files when PROMETHEUS_MULTIPROC_DIR is set; shared series (queues, jobs, deliveries, outbox)
are read from Redis and the database at scrape time (`app.monitoring.state`). The route is
outside /v1 and the OpenAPI document, takes no API key and is not rate limited. It is never
public by default: with METRICS_TOKEN set it needs `Authorization: Bearer <METRICS_TOKEN>`;
without it, only a development or testing instance serves it (elsewhere it is a 404).
"""

import hmac
import os

from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from app import errors
from app.config import LOCAL_ENVIRONMENTS
from app.monitoring.requests import register_request_metrics, request_families
from app.monitoring.state import GuardedCollector, database_families, redis_families

bp = Blueprint("monitoring", __name__)


def register_metrics(app: Flask) -> None:
    app.config.setdefault("METRICS_TOKEN", os.environ.get("METRICS_TOKEN", ""))
    register_request_metrics(app)
    app.register_blueprint(bp)


@bp.get("/metrics")
def metrics() -> Response:
    _authorize_scrape()
    registry = CollectorRegistry()
    registry.register(
        GuardedCollector(
            {"requests": _process_families, "redis": redis_families, "database": database_families}
        )
    )
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _authorize_scrape() -> None:
    token = current_app.config["METRICS_TOKEN"]
    if not token:
        if current_app.config["APP_ENV"] not in LOCAL_ENVIRONMENTS:
            raise errors.NotFound()
        return
    sent = request.headers.get("Authorization", "").encode()
    if not hmac.compare_digest(sent, f"Bearer {token}".encode()):
        raise errors.Unauthorized(headers={"WWW-Authenticate": 'Bearer realm="metrics"'})


def _process_families() -> list:
    """Every gunicorn worker's request series (from their files), or this process's."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        return list(MultiProcessCollector(None, path=directory).collect())
    return request_families()
