"""The local storage's own addresses: `PUT /storage/<key>` receives evidence, `GET` serves it.

Whoever holds a signed address may use it, with no API key, session or CSRF token; the
signature (app.storage.local) is the only credential. Errors use the API's JSON envelope
(`invalid_signature` 403, `content_type_mismatch` 400 for another header or for content
that does not start like the signed type, `content_length_mismatch` 400 for fewer bytes than
signed or 413 for more, `already_uploaded` 409, `service_unavailable`
503), with the request id and the service's security headers like every other answer.

These routes exist only while `EVIDENCE_STORAGE` is `local`; with another backend they
answer 404.
"""

import logging
from collections.abc import Iterator

from flask import Blueprint, Flask, jsonify, request, send_file
from werkzeug.exceptions import ClientDisconnected, HTTPException

from app.errors import (
    ApiError,
    Conflict,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    ServiceUnavailable,
    api_error_from_http,
    current_request_id,
    error_envelope,
)
from app.extensions import csrf
from app.storage import (
    ALLOWED_TYPES,
    MAX_EVIDENCE_BYTES,
    TYPE_HEAD_BYTES,
    StorageUnavailable,
    check_backend_setting,
    content_matches_type,
    evidence_storage,
)
from app.storage.local import LocalEvidenceStorage, ObjectExists
from app.storage.signing import SignatureRefused

log = logging.getLogger(__name__)

bp = Blueprint("storage", __name__, url_prefix="/storage")
VIEW_CONTENT_SECURITY_POLICY = "default-src 'none'"
_CHUNK = 64 * 1024


class InvalidSignature(PermissionDenied):
    code = "invalid_signature"
    message = "This address is not valid for this request, or has expired."


class ContentTypeMismatch(InvalidRequest):
    code = "content_type_mismatch"


class ContentLengthMismatch(InvalidRequest):
    code = "content_length_mismatch"


class AlreadyUploaded(Conflict):
    code = "already_uploaded"
    message = "A file is already stored at this address; evidence is written once."


class ContentTooLong(ContentLengthMismatch):
    status = 413


def register_storage(app: Flask) -> None:
    check_backend_setting(app.config)
    if app.config.get("EVIDENCE_STORAGE", "local") == "local":
        LocalEvidenceStorage.create_default_directory(app)
    csrf.exempt(bp)  # the signed address is the credential; there is no session to protect
    app.register_blueprint(bp)


@bp.put("/<path:key>")
def upload(key: str):
    """Store the body as `key` if it is exactly what the address was signed for.

    Nothing is stored unless the whole body is right, so a failed upload can be retried
    with the same address; a stored object is never replaced (409 `already_uploaded`), so
    evidence cannot change after it was confirmed."""
    storage = _storage()
    grant = _grant(storage, "PUT", key)
    if grant.content_type not in ALLOWED_TYPES or not (
        grant.content_length and 0 < grant.content_length <= MAX_EVIDENCE_BYTES
    ):
        raise InvalidSignature("This address does not allow an upload.")
    if request.headers.get("Content-Type") != grant.content_type:
        raise ContentTypeMismatch(
            f"Content-Type must be {grant.content_type}, as signed.", param="Content-Type"
        )
    declared = request.content_length
    if declared != grant.content_length:
        error = ContentTooLong if (declared or 0) > grant.content_length else ContentLengthMismatch
        raise error(
            f"Content-Length must be {grant.content_length}, as signed.", param="Content-Length"
        )
    if storage.path(key).exists():
        raise AlreadyUploaded()
    try:
        chunks = _of_type(_body(grant.content_length), grant.content_type)
        size = storage.save(key, grant.content_type, chunks)
    except ObjectExists as error:
        raise AlreadyUploaded() from error
    except StorageUnavailable as error:
        log.warning("evidence storage unavailable", exc_info=error)
        raise ServiceUnavailable("The document storage is unavailable; retry later.") from error
    return jsonify({"stored": True, "size": size})


@bp.get("/<path:key>")
def view(key: str):
    storage = _storage()
    grant = _grant(storage, "GET", key)
    path = storage.path(key)
    if not path.is_file():
        raise NotFound("No such object.")
    try:
        response = send_file(
            path, mimetype=storage.content_type(key), conditional=False, etag=False
        )
    except OSError as error:
        raise ServiceUnavailable("The document storage is unavailable; retry later.") from error
    remaining = max(grant.expires_at - storage.now(), 0)
    response.headers["Content-Disposition"] = "inline"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = VIEW_CONTENT_SECURITY_POLICY
    response.headers["Cache-Control"] = f"private, max-age={remaining}"
    return response


@bp.errorhandler(ApiError)
def _api_error(error: ApiError):
    response = jsonify(error_envelope(error))
    response.status_code = error.status
    response.headers.update(error.headers)
    return response


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException):
    return _api_error(api_error_from_http(error))


@bp.errorhandler(Exception)
def _unexpected(error: Exception):
    log.exception("unhandled error", extra={"request_id": current_request_id()})
    return _api_error(ApiError())


def _storage() -> LocalEvidenceStorage:
    storage = evidence_storage()
    if not isinstance(storage, LocalEvidenceStorage):
        raise NotFound("No such route or resource.")
    return storage


def _grant(storage: LocalEvidenceStorage, method: str, key: str):
    try:
        storage.path(key)
    except ValueError as error:
        raise InvalidRequest(str(error), code="invalid_key") from error
    try:
        return storage.verify(method, key, request.args.to_dict())
    except SignatureRefused as error:
        raise InvalidSignature(str(error)) from error


def _of_type(chunks: Iterator[bytes], content_type: str) -> Iterator[bytes]:
    """The chunks, once the file's first bytes show the signed type (before any is stored)."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= TYPE_HEAD_BYTES:
            break
    if not content_matches_type(head, content_type):
        raise ContentTypeMismatch(
            f"The file's content is not {content_type}, as signed.", param="body"
        )
    yield head
    yield from chunks


def _body(length: int) -> Iterator[bytes]:
    """The request body in chunks, exactly `length` bytes: fewer (the client stopped early) is
    a 400, more a 413, both before anything is stored.

    Only the signed length is asked of the stream: under a server that terminates the input
    itself (gunicorn), Werkzeug caps the stream at this route's limit and raises when asked
    for one byte past it, so that byte is looked for by `_input_goes_on` instead."""
    request.max_content_length = length  # this route's own limit, not MAX_CONTENT_LENGTH
    stream = request.stream
    received = 0
    while received < length:
        try:
            chunk = stream.read(min(_CHUNK, length - received))
        except ClientDisconnected as error:
            raise ContentLengthMismatch(
                f"The body ended before the signed {length} bytes."
            ) from error
        if not chunk:
            break
        received += len(chunk)
        yield chunk
    if received != length:
        raise ContentLengthMismatch(
            f"The body ended after {received} of the signed {length} bytes."
        )
    if _input_goes_on():
        raise ContentTooLong(f"The body is longer than the signed {length} bytes.")


def _input_goes_on() -> bool:
    """Whether the body holds more than was read. Only an input the server terminates may be
    read past Content-Length (it ends with the body); any other holds the next request's bytes
    there, or nothing yet, and a read would wait for them."""
    environ = request.environ
    return "wsgi.input_terminated" in environ and bool(environ["wsgi.input"].read(1))
