"""One error envelope for everything the API can answer, and the request id that ties logs to it.

Services raise `ApiError` subclasses and never know about HTTP; the handlers registered here
turn those, routing errors, validation errors and crashes into the contract's envelope:
`{"error": {type, code, message, param?, details?}, "request_id"}`.

A message is English marked for the catalogs (`marks.translatable`), with `%(name)s`
placeholders whose values travel on the error (`values`): the API answers the English with
the values written in (`message`), a page writes the same refusal in its reader's language
and notation (`templating.refusal_text`).
"""

import json
import logging
import re
import uuid
from collections.abc import Mapping
from http import HTTPStatus

import marshmallow as ma
from flask import Flask, g, jsonify, make_response, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from app.marks import translatable

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-Id"
_CLIENT_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")
ERROR_TYPES = (  # the contract's `error.type` values
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "conflict_error",
    "rate_limit_error",
    "api_error",
)
JSON_PATH_PREFIXES = ("/v1/", "/healthz", "/readyz", "/metrics")
# Arrays and objects open at once in a request body: far deeper than any body the API takes.
MAX_JSON_NESTING = 64


class ApiError(Exception):
    """Base of every error a service may raise; subclasses fix the HTTP status and type."""

    status = 500
    type = "api_error"
    code = "internal_error"
    message = translatable("An unexpected error occurred.")

    def __init__(
        self,
        message: str | None = None,
        *,
        values: Mapping[str, object] | None = None,
        code: str | None = None,
        param: str | None = None,
        details: list[dict] | None = None,
        headers: dict | None = None,
    ):
        self.template = message or self.message
        self.values = dict(values or {})
        # Each value writes itself in the API's notation (`formats.money.Amount`: BRL 12.34).
        self.message = (
            self.template % {k: str(v) for k, v in self.values.items()} if values else self.template
        )
        super().__init__(self.message)
        self.code = code or self.code
        self.param = param
        self.details = details
        self.headers = headers or {}


class InvalidRequest(ApiError):
    status, type, code, message = (
        400,
        "invalid_request_error",
        "invalid_request",
        translatable("Invalid request."),
    )


class Unauthorized(ApiError):
    status, type, code = 401, "authentication_error", "unauthorized"
    message = translatable("Missing or invalid credentials.")


class PermissionDenied(ApiError):
    status, type, code = 403, "permission_error", "forbidden"
    message = translatable("You are not allowed to do this.")


class NotFound(ApiError):
    status, type, code, message = (
        404,
        "not_found_error",
        "not_found",
        translatable("Resource not found."),
    )


class Conflict(ApiError):
    status, type, code, message = 409, "conflict_error", "conflict", translatable("Conflict.")


class Unprocessable(ApiError):
    status, type, code = 422, "invalid_request_error", "unprocessable_entity"
    message = translatable("The request cannot be processed.")


class RateLimited(ApiError):
    """Too many requests; `retry_after` (seconds) is sent as the `Retry-After` header."""

    status, type, code = 429, "rate_limit_error", "rate_limited"
    message = translatable("Too many requests; retry later.")

    def __init__(self, message: str | None = None, *, retry_after: int, **kwargs):
        super().__init__(message, **kwargs)
        self.headers["Retry-After"] = str(retry_after)


class ServiceUnavailable(ApiError):
    status, type, code = 503, "api_error", "service_unavailable"
    message = translatable("A service this request depends on is unavailable; retry later.")


# Routing and protocol errors raised by Werkzeug, mapped onto the contract's vocabulary.
_HTTP_STATUS_MAP = {
    400: (InvalidRequest, "invalid_request"),
    401: (Unauthorized, "unauthorized"),
    403: (PermissionDenied, "forbidden"),
    404: (NotFound, "not_found"),
    405: (InvalidRequest, "method_not_allowed"),
    409: (Conflict, "conflict"),
    413: (InvalidRequest, "payload_too_large"),
    415: (InvalidRequest, "unsupported_media_type"),
}


def api_error_from_http(exc: HTTPException) -> ApiError:
    """Translate a Werkzeug HTTP exception (404, 405, 413, …) into an ApiError."""
    error_class, code = _HTTP_STATUS_MAP.get(exc.code or 500, (ApiError, "internal_error"))
    message, values = _plain_message(exc)
    error = error_class(message, values=values, code=code)
    error.status = exc.code or 500
    if exc.code == 405 and exc.valid_methods:
        error.headers = {"Allow": ", ".join(exc.valid_methods)}
    return error


def _plain_message(exc: HTTPException) -> tuple[str, dict]:
    """The message and its values (see `ApiError`)."""
    if isinstance(exc, CSRFError):
        return translatable(
            "This form has expired or did not come from this site. Reload the page and try again."
        ), {}
    if exc.code == 404:
        return translatable("No such route or resource."), {}
    if exc.code == 405:
        return translatable("Method %(method)s is not allowed on this route."), {
            "method": request.method
        }
    return exc.description or HTTPStatus(exc.code or 500).phrase + ".", {}


def error_envelope(error: ApiError, request_id: str | None = None) -> dict:
    """The contract's envelope; `request_id` only where no request context exists (the web
    worker's own answers, app/web_worker.py)."""
    body: dict = {"type": error.type, "code": error.code, "message": error.message}
    if error.param:
        body["param"] = error.param
    if error.details:
        body["details"] = error.details
    return {"error": body, "request_id": request_id or current_request_id()}


def current_request_id() -> str:
    return g.get("request_id") or _assign_request_id()


def _assign_request_id() -> str:
    sent = request.headers.get(REQUEST_ID_HEADER, "")
    g.request_id = sent if _CLIENT_REQUEST_ID.match(sent) else new_request_id()
    return g.request_id


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def wants_json(path: str) -> bool:
    """The API and health checks answer JSON; dashboard and public pages answer HTML."""
    return path.startswith(JSON_PATH_PREFIXES) or path == "/v1"


def render_error(error: ApiError):
    """Answer an error in the caller's language: the JSON envelope, or an HTML page."""
    if wants_json(request.path):
        response = jsonify(error_envelope(error))
    else:
        response = make_response(render_template("errors/error.html", error=error))
    response.status_code = error.status
    response.headers.update(error.headers)
    return response


def handle_http_exception(exc: HTTPException):
    return render_error(api_error_from_http(exc))


def handle_unexpected(exc: Exception):
    if isinstance(exc, HTTPException):
        return handle_http_exception(exc)
    log.exception("unhandled error", extra={"request_id": current_request_id()})
    return render_error(ApiError())


class ErrorDetailSchema(ma.Schema):
    param = ma.fields.String()
    message = ma.fields.String()


class ErrorBodySchema(ma.Schema):
    type = ma.fields.String(
        required=True,
        metadata={"enum": list(ERROR_TYPES)},
    )
    code = ma.fields.String(required=True)
    message = ma.fields.String(required=True)
    param = ma.fields.String()
    details = ma.fields.List(ma.fields.Nested(ErrorDetailSchema))


class ErrorSchema(ma.Schema):
    error = ma.fields.Nested(ErrorBodySchema, required=True)
    request_id = ma.fields.String(required=True)


# A NUL escaped in JSON text (`\u0000`), not preceded by an escaping backslash.
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
# A `\uD800`-`\uDFFF` escape that is not half of a pair: no UTF-8 text can hold it.
_JSON_LONE_SURROGATE = re.compile(
    rb"(?<!\\)(?:\\\\)*\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})(?<!\\)(?:\\\\)*\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def refuse_unstorable_text() -> None:
    """No text may hold U+0000 or a lone surrogate: PostgreSQL cannot store the first and
    nothing can encode the second as UTF-8, so each is a 400 here, on every route, rather
    than an error later. Only text bodies are read (JSON and form posts); uploads are left
    alone."""
    if "\x00" in request.path or b"%00" in request.query_string.lower():
        raise InvalidRequest("The address may not contain the NUL character (U+0000).")
    if request.mimetype == "application/x-www-form-urlencoded":
        body = request.get_data()
        if b"%00" in body.lower() or b"\x00" in body:
            raise InvalidRequest("A field may not contain the NUL character (U+0000).")
    if request.mimetype == "application/json":
        body = request.get_data()
        escaped = b"\\u" in body  # without an escape (most bodies) no pattern can match
        if b"\x00" in body or (escaped and _JSON_NUL.search(body)):
            raise InvalidRequest("Text may not contain the NUL character (U+0000).")
        if escaped and _JSON_LONE_SURROGATE.search(body):
            raise InvalidRequest("Text may not contain a lone UTF-16 surrogate (\\uD800-\\uDFFF).")


# A JSON string, to its closing quote or to the end of a body that never closes it (linear:
# nothing is matched twice); the brackets inside it are text, not nesting.
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+\\?(?:"|\Z)', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]++")
_OPENING_BRACKETS = frozenset("[{")


def refuse_deep_json() -> None:
    """A body nested deeper than MAX_JSON_NESTING is a 400 before anything parses it: Python's
    parser recurses once per level, and a body of 50,000 `[` exhausts the stack (a 500). Every
    body an API route may parse is checked, whatever its Content-Type, since the idempotency
    fingerprint and the PSP's webhook parse without looking at it."""
    if not (request.is_json or wants_json(request.path)):
        return
    if _json_nesting_exceeds(request.get_data(), MAX_JSON_NESTING):
        raise InvalidRequest(
            f"The request body is not valid JSON: it nests arrays and objects more than "
            f"{MAX_JSON_NESTING} levels deep."
        )


def _json_nesting_exceeds(body: bytes, limit: int) -> bool:
    """Whether `body`, decoded as `json.loads` decodes bytes, opens more than `limit` arrays and
    objects at once. Only brackets outside strings count."""
    try:
        text = body.decode(json.detect_encoding(body))
    except UnicodeDecodeError:
        return False  # no parser gets past the decoding, so none recurses
    if text.count("[") + text.count("{") <= limit:
        return False  # most bodies: too few brackets to nest that deep
    depth = 0
    for bracket in _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in _OPENING_BRACKETS else -1
        if depth > limit:
            return True
    return False


def register_error_handlers(app: Flask) -> None:
    @app.before_request
    def assign_request_id() -> None:
        _assign_request_id()

    app.before_request(refuse_unstorable_text)
    app.before_request(refuse_deep_json)

    app.register_error_handler(ApiError, render_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)

    @app.after_request
    def add_request_id(response):
        response.headers[REQUEST_ID_HEADER] = current_request_id()
        return response
