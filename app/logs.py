"""Structured logs: one JSON object per line, and one line per request.

The request line carries what an operator needs to follow a call across services: the
request id (also in `X-Request-Id`), the account, the API key fingerprint, status and
duration. Secrets, keys and bodies are never logged: a route that carries a secret in its
path (the live PSP's webhook, `/<secret>/pix`) is logged with that segment as `***`, also for
calls that miss the route (a wrong secret, a wrong method).
"""

import json
import logging
import re
import sys
import time

from flask import Flask, g, request

from app.errors import current_request_id

request_log = logging.getLogger("acme.request")
SECRET_PATH_VARIABLE = "secret"  # noqa: S105 (a route variable's name)
SECRET_MASK = "***"  # noqa: S105 (what is logged instead)
_RULE_VARIABLE = re.compile(r"<(?:[^<>:]+:)?([^<>:]+)>")
_STANDARD_ATTRS = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD_ATTRS})
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def register_request_log(app: Flask) -> None:
    secret_routes: list[re.Pattern] | None = None

    @app.before_request
    def start_timer():
        g.request_started = time.perf_counter()

    @app.after_request
    def log_request(response):
        nonlocal secret_routes
        started = g.get("request_started", time.perf_counter())
        if secret_routes is None:  # on the first request, once every blueprint is registered
            secret_routes = _secret_route_patterns(app)
        request_log.info(
            "request",
            extra={
                "request_id": current_request_id(),
                "method": request.method,
                "path": _masked_path(request.path, secret_routes),
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "account_id": g.get("account_id"),
                "apiKeyFingerprint": g.get("api_key_fingerprint"),
            },
        )
        return response


def _masked_path(path: str, secret_routes: list[re.Pattern]) -> str:
    """`path` with the secret segment of the first secret route it starts like as `***`."""
    for pattern in secret_routes:
        match = pattern.match(path)
        if match:
            return path[: match.start(1)] + SECRET_MASK + path[match.end(1) :]
    return path


def _secret_route_patterns(app: Flask) -> list[re.Pattern]:
    """For each rule with a `<secret>` variable, a pattern of its start up to that variable
    (the secret's segment in group 1); a prefix is enough to mask probes of any method or
    any tail."""
    patterns = []
    for rule in app.url_map.iter_rules():
        if SECRET_PATH_VARIABLE not in rule.arguments:
            continue
        parts, position = [], 0
        for variable in _RULE_VARIABLE.finditer(rule.rule):
            parts.append(re.escape(rule.rule[position : variable.start()]))
            if variable.group(1) == SECRET_PATH_VARIABLE:
                parts.append("([^/]+)")
                break
            parts.append("[^/]+")
            position = variable.end()
        patterns.append(re.compile("".join(parts)))
    return patterns
