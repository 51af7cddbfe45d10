"""A loopback webhook endpoint that never answers in time, for the deployed stack's tests of
case 3 of issue 19: it either holds each request unanswered or trickles its status line and
headers a byte at a time, until the sender hangs up or the test releases it. It records when
each request arrived and when its sender hung up, so a test can say what happened while a
delivery was still open without timing anything itself."""

import contextlib
import select
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

POLL_SECONDS = 0.05
TRICKLE_SECONDS = 0.5
RELEASED_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class Mode(Enum):
    HOLD = "hold"  # read the request, then say nothing
    TRICKLE = "trickle"  # a status line, then one header byte every TRICKLE_SECONDS


@dataclass
class Request:
    """One request: `arrived` and `hung_up` are time.monotonic() readings."""

    body: bytes
    arrived: float
    hung_up: float | None = None

    def open_throughout(self, start: float, end: float) -> bool:
        """Whether the sender was still waiting on this request for all of [start, end]."""
        return self.arrived <= start and (self.hung_up is None or self.hung_up >= end)


@dataclass
class SlowEndpoint:
    server: socketserver.ThreadingTCPServer
    mode: Mode
    requests: list[Request] = field(default_factory=list)
    most_open_at_once: int = 0
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def open_requests(self) -> list[Request]:
        with self.lock:
            return [request for request in self.requests if request.hung_up is None]

    def arrived(self, body: bytes) -> Request:
        request = Request(body, time.monotonic())
        with self.lock:
            self.requests.append(request)
            open_now = sum(1 for each in self.requests if each.hung_up is None)
            self.most_open_at_once = max(self.most_open_at_once, open_now)
        return request

    def hung_up(self, request: Request) -> None:
        with self.lock:
            request.hung_up = time.monotonic()

    def release(self) -> None:
        """Answer 200 to every request still open, and to every later one at once."""
        self.released.set()


def read_request(connection: socket.socket) -> bytes | None:
    """One whole request read off `connection`, head then its Content-Length body; the body,
    or None if the sender hung up first. A fake endpoint that answers before the whole
    request is read may answer a kept connection's next request early."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        body += chunk
    return body


def _sender_hung_up(connection: socket.socket) -> bool:
    """Whether the sender closed its side (a readable socket with nothing to read)."""
    readable, _, _ = select.select([connection], [], [], POLL_SECONDS)
    return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""


def _hold(endpoint: SlowEndpoint, connection: socket.socket) -> bool:
    """Wait until released (True) or the sender hangs up (False), answering nothing."""
    while not endpoint.released.is_set():
        if _sender_hung_up(connection):
            return False
    return True


def _trickle(endpoint: SlowEndpoint, connection: socket.socket) -> bool:
    """Send a status line, then one byte of a header at a time, never ending the headers."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    next_byte_at = time.monotonic() + TRICKLE_SECONDS
    while not endpoint.released.is_set():
        if _sender_hung_up(connection):
            return False
        if time.monotonic() >= next_byte_at:
            connection.sendall(b"x")
            next_byte_at += TRICKLE_SECONDS
    return True


def start_slow_endpoint(mode: Mode) -> SlowEndpoint:
    endpoint: SlowEndpoint
    waits = {Mode.HOLD: _hold, Mode.TRICKLE: _trickle}

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            body = read_request(self.request)
            if body is None:
                return
            request = endpoint.arrived(body)
            try:
                if waits[endpoint.mode](endpoint, self.request):
                    self.request.sendall(
                        RELEASED_ANSWER if endpoint.mode is Mode.HOLD else b"\r\n\r\n"
                    )
            except OSError:
                pass  # the sender hung up while a byte was going out
            finally:
                endpoint.hung_up(request)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    endpoint = SlowEndpoint(server=server, mode=mode)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return endpoint


@contextlib.contextmanager
def slow_endpoint(mode: Mode) -> Iterator[SlowEndpoint]:
    """A slow endpoint for the block; released and stopped even when the block fails."""
    endpoint = start_slow_endpoint(mode)
    try:
        yield endpoint
    finally:
        endpoint.release()
        endpoint.server.shutdown()
        endpoint.server.server_close()
