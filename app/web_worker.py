"""The web tier's gunicorn worker (deploy/gunicorn.conf.py): gthread, with two changes.

Request bodies arrive before a thread is spent on them. gthread hands a connection to a
thread once its headers are readable, and the application then reads the body in that
thread: eight clients trickling a body a byte a second held every thread, and /healthz
waited behind them (issue 19). Here, a thread that parses the headers of a request whose
body has not fully arrived hands the connection back to the worker's event loop, which
collects the body without a thread, as nginx does in front; only a complete request goes
back to a thread. A client silent for BODY_IDLE_SECONDS mid-body is answered 408 and
dropped. Bodies wait in memory, so only those the service may accept are collected (up to
MAX_EVIDENCE_BYTES): a longer one goes straight to the application, which refuses it by its
Content-Length without reading it. A chunked body has no length to wait for and is read by
the thread as before (nginx removes the chunking in production).

gunicorn's own refusals (a request line or header too long, malformed HTTP) are answered in
the contract's error envelope instead of gunicorn's HTML page.
"""

import contextlib
import json
import selectors
import time
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.http.body import LengthReader
from gunicorn.workers.gthread import TConn, ThreadWorker

from app.errors import REQUEST_ID_HEADER, InvalidRequest, error_envelope, new_request_id
from app.storage import MAX_EVIDENCE_BYTES

BODY_IDLE_SECONDS = 20  # as nginx's client_body_timeout (deploy/nginx/acme.conf)
RECEIVE_BYTES = 256 * 1024
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
AWAITING_BODY = object()  # handle()'s answer: the event loop collects the body


@dataclass(frozen=True)
class Refusal:
    status: HTTPStatus
    code: str
    message: str

    def response(self) -> bytes:
        """A complete HTTP/1.1 answer that closes the connection, its body the envelope."""
        request_id = new_request_id()
        error = InvalidRequest(self.message, code=self.code)
        body = json.dumps(error_envelope(error, request_id)).encode()
        head = (
            f"HTTP/1.1 {self.status.value} {self.status.phrase}\r\n"
            "Connection: close\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{REQUEST_ID_HEADER}: {request_id}\r\n\r\n"
        )
        return head.encode("ascii") + body


MALFORMED = Refusal(HTTPStatus.BAD_REQUEST, "malformed_request", "The request is not valid HTTP.")
# By exact type: InvalidResponseHeader subclasses InvalidHeader but is the application's fault.
REFUSALS = {
    http_errors.LimitRequestLine: Refusal(
        HTTPStatus.REQUEST_URI_TOO_LONG,
        "request_line_too_long",
        "The request line (method, path and query) is longer than this server accepts.",
    ),
    http_errors.LimitRequestHeaders: Refusal(
        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
        "header_too_large",
        "A request header is too large, or there are too many of them.",
    ),
    **dict.fromkeys(
        (
            http_errors.InvalidRequestLine,
            http_errors.InvalidRequestMethod,
            http_errors.InvalidHTTPVersion,
            http_errors.InvalidHeader,
            http_errors.InvalidHeaderName,
            http_errors.ObsoleteFolding,
            http_errors.InvalidChunkSize,
            http_errors.ChunkMissingTerminator,
            http_errors.InvalidChunkExtension,
        ),
        MALFORMED,
    ),
}
BODY_TIMEOUT = Refusal(
    HTTPStatus.REQUEST_TIMEOUT,
    "request_timeout",
    f"The request body stopped arriving (nothing for {BODY_IDLE_SECONDS} seconds).",
)


@dataclass
class AwaitedBody:
    """A parsed request whose body the event loop is collecting."""

    request: object
    missing: int
    chunks: list[bytes] = field(default_factory=list)
    idle_deadline: float = 0.0


class WebWorker(ThreadWorker):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.awaiting_body: set[TConn] = set()  # touched by the event loop's thread only

    def handle(self, conn: TConn):
        """In a thread: serve a request whose body has arrived, or parse the next one."""
        awaited = getattr(conn, "awaited_body", None)
        if awaited is not None:
            conn.awaited_body = None
            return self._serve(awaited.request, conn)
        keepalive = super().handle(conn)
        return AWAITING_BODY if getattr(conn, "awaited_body", None) else keepalive

    def handle_request(self, req, conn: TConn):
        missing = _body_bytes_missing(req, conn)
        if not missing:
            return super().handle_request(req, conn)
        if req._expected_100_continue:  # the client waits for this before sending the body
            conn.sock.sendall(CONTINUE)
            req._expected_100_continue = False  # else gunicorn sends it again
        conn.awaited_body = AwaitedBody(req, missing)
        return False  # nothing to drain: handle() hands the connection to the event loop

    def _serve(self, req, conn: TConn) -> bool:
        """gthread's handling of a parsed request, for one whose body was collected."""
        try:
            conn.sock.setblocking(True)
            return self._keepalive_after(conn, super().handle_request(req, conn))
        except StopIteration:  # gunicorn already closed a connection it could not answer on
            return False
        except OSError as error:
            self.log.debug("Connection lost while answering: %s", error)
            return False
        except Exception as error:
            self.handle_error(req, conn.sock, conn.client, error)
            return False

    def finish_request(self, conn: TConn, fs):
        if fs.cancelled() or fs.exception() or fs.result() is not AWAITING_BODY:
            super().finish_request(conn, fs)
            return
        conn.sock.setblocking(False)
        conn.awaited_body.idle_deadline = time.monotonic() + BODY_IDLE_SECONDS
        self.awaiting_body.add(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._receive_body, conn))

    def _receive_body(self, conn: TConn, sock) -> None:
        awaited = conn.awaited_body
        try:
            data = sock.recv(min(awaited.missing, RECEIVE_BYTES))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            self._drop(conn)
            return
        awaited.chunks.append(data)
        awaited.missing -= len(data)
        awaited.idle_deadline = time.monotonic() + BODY_IDLE_SECONDS
        if awaited.missing:
            return
        self._stop_waiting(conn)
        unreader = conn.parser.unreader  # the request's body reader reads from it
        unreader.unread(unreader.take_buffered() + b"".join(awaited.chunks))
        awaited.chunks.clear()
        self.enqueue_req(conn)

    def murder_pending(self):
        """Also drop the connections whose body stopped arriving, with a 408."""
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c in self.awaiting_body if c.awaited_body.idle_deadline <= now]:
            self._drop(conn, BODY_TIMEOUT)

    def _drop(self, conn: TConn, refusal: Refusal | None = None) -> None:
        self._stop_waiting(conn)
        if refusal:
            _send_refusal(conn.sock, refusal)
        self.nr_conns -= 1
        conn.close()

    def _stop_waiting(self, conn: TConn) -> None:
        self.poller.unregister(conn.sock)
        self.awaiting_body.discard(conn)

    def handle_error(self, req, client, addr, exc):
        refusal = REFUSALS.get(type(exc))
        if refusal is None:
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        _send_refusal(client, refusal)


def _body_bytes_missing(req, conn: TConn) -> int:
    """How much of a request's body has yet to arrive, if it is one worth waiting for."""
    reader = req.body.reader
    if not isinstance(reader, LengthReader) or reader.length > MAX_EVIDENCE_BYTES:
        return 0
    return max(reader.length - len(conn.parser.unreader.buf.getvalue()), 0)


def _send_refusal(sock, refusal: Refusal) -> None:
    """Best effort: a client that does not read its answer does not get to hold a thread."""
    with contextlib.suppress(OSError):
        util.write_nonblock(sock, refusal.response())
