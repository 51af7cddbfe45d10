"""A real HTTP server on localhost that records what webhooks deliver to it."""

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    connection: int = 0  # the sender's port: one per connection it opened


@dataclass
class Receiver:
    """Answers with the next scripted reply (status, headers, delay), then 200 for ever."""

    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    replies: list[tuple[int, dict, float]] = field(default_factory=list)
    answering: int = 0
    most_at_once: int = 0  # the most requests it was answering at the same moment
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def reply(self, status: int, headers: dict | None = None, delay: float = 0.0) -> None:
        self.replies.append((status, headers or {}, delay))

    def next_reply(self) -> tuple[int, dict, float]:
        return self.replies.pop(0) if self.replies else (200, {}, 0.0)

    def stop(self) -> None:
        """Stop serving and close the socket, so later deliveries are refused at once
        (after `shutdown` alone, connections would wait unanswered in the backlog)."""
        self.server.shutdown()
        self.server.server_close()


def start_receiver(keep_alive: bool = False) -> Receiver:
    """With `keep_alive`, HTTP/1.1: a connection stays open after each answer (without
    Nagle's algorithm, as such servers run) unless the reply's headers say `Connection: close`."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
        disable_nagle_algorithm = keep_alive

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.received.append(
                    Received(self.path, dict(self.headers), body, self.client_address[1])
                )
                status, headers, delay = receiver.next_reply()
                receiver.answering += 1
                receiver.most_at_once = max(receiver.most_at_once, receiver.answering)
            time.sleep(delay)
            with receiver.lock:
                receiver.answering -= 1
            answer = b'{"ok":true}' if status < 300 else b"nope"
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver = Receiver(server=server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver


@contextlib.contextmanager
def receiving(keep_alive: bool = False) -> Iterator[Receiver]:
    """A receiver for the duration of the block, stopped even when the block fails."""
    receiver = start_receiver(keep_alive)
    try:
        yield receiver
    finally:
        receiver.stop()
