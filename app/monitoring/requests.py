"""HTTP request count and duration, per web process.

Labels are the route template (`/v1/charges/<charge_id>`), never the raw path, so ids and
secrets never become label values; requests that match no route share `unmatched`. Under
gunicorn with PROMETHEUS_MULTIPROC_DIR set each worker writes its own file and /metrics sums
them (`deploy/gunicorn.conf.py` sets it up). Counting never fails a request.
"""

import logging
import time

from flask import Flask, Response, g, request
from prometheus_client import Counter, Histogram

log = logging.getLogger(__name__)
UNMATCHED_ROUTE = "unmatched"
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# registry=None: exposed by /metrics's own registry, from this process or every process's files.
REQUESTS = Counter(
    "acme_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=None,
)
REQUEST_DURATION = Histogram(
    "acme_http_request_duration_seconds",
    "Time to produce the response (a streamed body is not included), by method and route.",
    ["method", "route"],
    registry=None,
)


def register_request_metrics(app: Flask) -> None:
    @app.before_request
    def start_request_timer() -> None:
        g.metrics_request_started = time.perf_counter()

    @app.after_request
    def count_request(response: Response) -> Response:
        try:
            method = request.method if request.method in KNOWN_METHODS else "other"
            route = request.url_rule.rule if request.url_rule else UNMATCHED_ROUTE
            REQUESTS.labels(method, route, str(response.status_code)).inc()
            started = g.get("metrics_request_started")
            if started is not None:
                REQUEST_DURATION.labels(method, route).observe(time.perf_counter() - started)
        except Exception:
            log.warning("request metrics not recorded", exc_info=True)
        return response


def request_families() -> list:
    return [*REQUESTS.collect(), *REQUEST_DURATION.collect()]
