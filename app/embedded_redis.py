"""A Redis-compatible server inside this process (fakeredis over TCP) for machines without Redis.

Used by the run command and the test suite when REDIS_URL is not set, so the RQ worker and
`rq cron` still run as separate processes talking to a real socket. It keeps nothing on disk.
"""

import threading

from fakeredis import TcpFakeServer
from fakeredis._clients._tcp_server import TCPFakeRequestHandler
from fakeredis._commands import command
from fakeredis._socket._fakesocket import FakeSocket
from redis.exceptions import ResponseError

REPORTED_VERSION = "7.2.0"


@command((), (bytes,))
def info(self, *sections: bytes) -> bytes:
    """INFO, which fakeredis lacks: RQ reads `redis_version` from it before every job.

    Without it the TCP server closes the connection and the worker backs off for seconds.
    """
    return f"# Server\r\nredis_version:{REPORTED_VERSION}\r\nredis_mode:standalone\r\n".encode()


FakeSocket.info = info


class _RequestHandler(TCPFakeRequestHandler):
    """Behaves like Redis where fakeredis's TCP handler does not.

    - Client addresses are `host:port` (RQ parses CLIENT INFO).
    - An error reply (NOSCRIPT, WRONGTYPE, …) is sent as a reply and the connection stays
      open; fakeredis closes it, which breaks redis-py's EVALSHA-then-SCRIPT LOAD fallback.
    """

    def setup(self) -> None:
        super().setup()
        info = self.current_client.get_socket()._client_info
        info["addr"] = "{}:{}".format(*self.connection.getpeername()[:2])
        info["laddr"] = "{}:{}".format(*self.connection.getsockname()[:2])
        read_response = self.current_client.read_response

        def read_response_keeping_errors(**kwargs):
            try:
                return read_response(**kwargs)
            except ResponseError as error:
                return error

        self.current_client.read_response = read_response_keeping_errors


class EmbeddedRedis:
    """Start with `start()`; `url` is what REDIS_URL should be for the processes that use it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._server = TcpFakeServer((host, port))
        self._server.RequestHandlerClass = _RequestHandler
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"redis://{host}:{port}/0"

    def start(self) -> "EmbeddedRedis":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
