"""Structured logs: one JSON object per line, and one line per request.

The request line carries what an operator needs to follow a call across services: the
request id (also in `X-Request-Id`), the account, the API key fingerprint, status and
duration. Secrets, keys and bodies are never logged.
"""

import json
import logging
import sys
import time

from flask import Flask, g, request

from app.errors import current_request_id

request_log = logging.getLogger("acme.request")
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
    @app.before_request
    def start_timer():
        g.request_started = time.perf_counter()

    @app.after_request
    def log_request(response):
        started = g.get("request_started", time.perf_counter())
        request_log.info(
            "request",
            extra={
                "request_id": current_request_id(),
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "account_id": g.get("account_id"),
                "apiKeyFingerprint": g.get("api_key_fingerprint"),
            },
        )
        return response
