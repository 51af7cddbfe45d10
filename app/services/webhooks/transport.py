"""HTTP transport: one attempt's POST, made safe against the endpoint it calls.

Kept apart from the database work around it: `send` runs with no transaction open, turns
every failure into an `Attempt`, connects only to addresses `addresses.checked_addresses`
has just approved (no DNS rebinding), follows no redirects, ignores the environment's
proxies, sends no cookies, and ends at a hard deadline however slowly the endpoint answers. The
delivery engine keeps connections alive between attempts to the same endpoint address
(`KeptConnections`); a single resend opens its own.
"""

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3
from flask import current_app
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

from app.models import KeyMode
from app.models.base import utcnow
from app.retries import retry_after
from app.services.webhooks.addresses import DestinationRefused, checked_addresses

INACTIVE_ERROR = "The endpoint is inactive or deleted; the delivery was abandoned."
TIMED_OUT_ERROR = "Timed out: the endpoint took longer than {seconds} s in all."
MAX_RESPONSE_BODY = 2000
MAX_RETRY_AFTER = timedelta(hours=24)


@dataclass(frozen=True)
class Attempt:
    """What one POST produced: a status code and body, or an error before any answer."""

    status_code: int | None
    body: str | None
    error: str | None
    retry_after: timedelta | None = None


@dataclass(frozen=True)
class Outgoing:
    """Everything a POST needs, read before the database transaction ends."""

    url: str
    mode: KeyMode
    active: bool
    body: bytes
    headers: dict


class KeptConnections:
    """Connections kept alive between attempts to the same host and address, for one run of
    the delivery engine: one pinned session per endpoint host, each address's pool keeping
    at most as many idle connections as the engine has senders (endpoints on one host share
    it). A connection goes back to its pool only after an answer read to its end that does
    not ask to close; every other one is closed. Shared by the engine's sender threads."""

    def __init__(self, connections_per_address: int):
        self._per_address = connections_per_address
        self._sessions: dict[str, requests.Session] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> "KeptConnections":
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:
            for session in self._sessions.values():
                session.close()
            self._sessions.clear()

    def session_for(self, hostname: str) -> requests.Session:
        with self._lock:
            if hostname not in self._sessions:
                self._sessions[hostname] = pinned_session(hostname, self._per_address)
            return self._sessions[hostname]


def send(outgoing: Outgoing, kept: KeptConnections | None = None) -> Attempt:
    """POST one attempt (no database transaction open): every failure becomes an Attempt.

    The host is resolved once, here, and the request goes to one of those checked addresses
    (`_post_pinned`), so a DNS answer that changes after the check (rebinding) is never
    used. Redirects are not followed and the environment's proxies are ignored. The attempt
    ends after WEBHOOK_TIMEOUT_SECONDS in all (`AttemptDeadline`); an answer whose status
    came by then counts by its status, with as much of its body as came too. With `kept`, the
    attempt may reuse a connection an earlier attempt to the same address left open."""
    if not outgoing.active:
        return Attempt(None, None, INACTIVE_ERROR)
    parts = urlsplit(outgoing.url)
    try:
        addresses = checked_addresses(parts.hostname or "", outgoing.mode)
    except DestinationRefused as refusal:
        return Attempt(None, None, str(refusal))
    timeout = current_app.config["WEBHOOK_TIMEOUT_SECONDS"]
    with (
        AttemptDeadline(timeout) as deadline,
        contextlib.nullcontext(kept.session_for(parts.hostname))
        if kept
        else pinned_session(parts.hostname) as session,
    ):
        try:
            with _post_pinned(session, outgoing, addresses, deadline) as answer:
                body = _read_capped(answer)
        except (requests.exceptions.RequestException, ValueError) as error:
            return Attempt(None, None, _failure(error, deadline.expired, timeout))
    return Attempt(
        status_code=answer.status_code,
        body=body,
        error=None,
        retry_after=(
            retry_after(answer.headers.get("Retry-After"), MAX_RETRY_AFTER, utcnow())
            if answer.status_code == 429
            else None
        ),
    )


def _failure(error: Exception, out_of_time: bool, timeout: int) -> str:
    """What the delivery log says of an attempt that got no answer."""
    if out_of_time or isinstance(error, requests.exceptions.Timeout):
        return TIMED_OUT_ERROR.format(seconds=timeout)
    if isinstance(error, requests.exceptions.SSLError):
        return f"TLS error: {_short(error)}"
    if isinstance(error, requests.exceptions.ConnectionError):
        return f"Connection failed: {_short(error)}"
    return f"Request failed: {_short(error)}"


class AttemptDeadline:
    """The end of one attempt, whatever it is doing then: the process's deadline watcher
    shuts down every socket the attempt used, so a slow connect's successor, a TLS
    handshake, headers or a body trickled a byte at a time all stop at the deadline.
    Per-read timeouts alone never stop an endpoint that sends a byte before each runs out
    (it held a worker for the whole job). The connections made or reused in the thread
    while it is entered are its own (`_current_deadline`)."""

    def __init__(self, seconds: float):
        self.expired = False
        self.ended = False
        self.ends_at = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def __enter__(self) -> "AttemptDeadline":
        _watcher().watch(self)
        _attempt.deadline = self
        return self

    def __exit__(self, *exc_info) -> None:
        _attempt.deadline = None
        with self._lock:
            self.ended = True
            for watched in self._sockets:
                watched.close()
            self._sockets.clear()

    def remaining(self) -> float:
        """Seconds left, at least a millisecond (a zero timeout would mean non-blocking)."""
        return max(self.ends_at - time.monotonic(), 0.001)

    def watch(self, connection: socket.socket) -> None:
        """Shut the connection down at the deadline (at once if it has passed). A duplicate
        of the socket is kept: TLS detaches the original, and shutting the duplicate down
        ends the same connection; closing the duplicate at the end leaves it open."""
        duplicate = socket.fromfd(connection.fileno(), connection.family, connection.type)
        with self._lock:
            self._sockets.append(duplicate)
            if self.expired:
                _shut_down(duplicate)

    def expire(self) -> None:
        """The deadline has come: every watched socket is shut down (the watcher calls it)."""
        with self._lock:
            if self.ended:
                return
            self.expired = True
            for watched in self._sockets:
                _shut_down(watched)


class _DeadlineWatcher:
    """One thread per process that expires attempts' deadlines in time order (instead of a
    timer thread started for every attempt)."""

    def __init__(self):
        self._due: list[tuple[float, int, AttemptDeadline]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        threading.Thread(target=self._run, name="webhook-deadlines", daemon=True).start()

    def watch(self, deadline: AttemptDeadline) -> None:
        with self._changed:
            heapq.heappush(self._due, (deadline.ends_at, next(self._order), deadline))
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, deadline = heapq.heappop(self._due)
            deadline.expire()


_watchers: dict[int, _DeadlineWatcher] = {}
_watchers_lock = threading.Lock()
_attempt = threading.local()


def _watcher() -> _DeadlineWatcher:
    """This process's watcher (a forked child starts its own: threads do not survive fork)."""
    with _watchers_lock:
        if os.getpid() not in _watchers:
            _watchers.clear()
            _watchers[os.getpid()] = _DeadlineWatcher()
        return _watchers[os.getpid()]


def _current_deadline() -> AttemptDeadline:
    """The deadline of the attempt this thread is making."""
    return _attempt.deadline


def _shut_down(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the peer may have closed it already
        connection.shutdown(socket.SHUT_RDWR)


class _WatchedConnection:
    """An urllib3 connection whose new socket the attempt's deadline watches."""

    def _new_conn(self) -> socket.socket:
        connection = super()._new_conn()
        _current_deadline().watch(connection)
        return connection


class _WatchedHTTPConnection(_WatchedConnection, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnection, HTTPSConnection):
    pass


class _WatchedPool:
    """A connection pool whose connections, new or kept from an earlier attempt, are
    watched by the deadline of the attempt that takes them."""

    def _get_conn(self, timeout=None):
        connection = super()._get_conn(timeout)
        if connection.sock is not None:
            _current_deadline().watch(connection.sock)
        return connection


class _WatchedHTTPPool(_WatchedPool, HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(_WatchedPool, HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """No retries, and every connection used under the deadline of the attempt using it."""

    def __init__(self, connections_per_address: int):
        super().__init__(max_retries=0, pool_maxsize=connections_per_address)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPPool,
            "https": _WatchedHTTPSPool,
        }


class _PinnedHostAdapter(_DeadlineAdapter):
    """HTTPS to an address given in the URL while TLS sends SNI for, and verifies the
    certificate against, the endpoint's host name."""

    def __init__(self, hostname: str, connections_per_address: int):
        self._hostname = hostname
        super().__init__(connections_per_address)

    def init_poolmanager(self, *args, **kwargs) -> None:
        kwargs.update(server_hostname=self._hostname, assert_hostname=self._hostname)
        super().init_poolmanager(*args, **kwargs)


def pinned_session(hostname: str, connections_per_address: int = 1) -> requests.Session:
    """A session to one endpoint host that ignores the environment (HTTP(S)_PROXY, .netrc,
    REQUESTS_CA_BUNDLE: a proxy would connect wherever the name resolves for it). Attempts
    use only its adapters (`_post_to`), so no cookie from one answer reaches another
    request."""
    session = requests.Session()
    session.trust_env = False
    session.mount("https://", _PinnedHostAdapter(hostname, connections_per_address))
    session.mount("http://", _DeadlineAdapter(connections_per_address))
    return session


def _post_pinned(
    session: requests.Session, outgoing: Outgoing, addresses: list[str], deadline: AttemptDeadline
) -> requests.Response:
    """POST to the first checked address that accepts a connection (in the resolver's order,
    as a normal connection tries them), with the endpoint's own Host header."""
    *fallbacks, last = addresses
    for address in fallbacks:
        try:
            return _post_to(session, outgoing, address, deadline)
        except requests.exceptions.ConnectionError as error:
            reason = getattr(error.args[0], "reason", None) if error.args else None
            if not isinstance(reason, NewConnectionError):  # it connected: do not send twice
                raise
    return _post_to(session, outgoing, last, deadline)


def _post_to(
    session: requests.Session, outgoing: Outgoing, address: str, deadline: AttemptDeadline
) -> requests.Response:
    """The connect and each read wait at most what is left of the attempt (the deadline
    watches a socket only once it is connected). Sent straight through the session's
    adapter, with the session's default headers: no cookies, hooks, redirects or settings
    from the environment, and none of `Session.request`'s work per attempt."""
    parts = urlsplit(outgoing.url)
    port = parts.port if parts.port is not None else (443 if parts.scheme == "https" else 80)
    literal = f"[{address}]" if ":" in address else address
    url = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
    request = requests.Request(
        "POST",
        url,
        data=outgoing.body,
        headers={
            **session.headers,
            **outgoing.headers,
            "Host": parts.netloc.rpartition("@")[2],
        },
    ).prepare()
    answer = session.get_adapter(url).send(
        request, stream=True, timeout=deadline.remaining(), verify=True, proxies={}
    )
    if deadline.expired:  # the deadline cut its headers short: what was parsed is no answer
        answer.close()
        raise requests.exceptions.Timeout("The headers did not arrive in time.")
    return answer


def _read_capped(answer: requests.Response) -> str:
    """At most MAX_RESPONSE_BODY bytes, taken as they arrive (a sized read would wait for its
    whole size); a dripping body is cut at the attempt's deadline, which shuts the socket.
    An answer read to its end gives its connection back to its pool (urllib3 does, unless
    the answer asked to close); closing the answer closes any other."""
    kept = b""
    while len(kept) < MAX_RESPONSE_BODY:
        try:
            chunk = answer.raw.read1(MAX_RESPONSE_BODY - len(kept), decode_content=True)
        except urllib3.exceptions.HTTPError:  # stalled or cut short: the status has arrived
            break
        if not chunk:
            break
        kept += chunk
    return kept.decode("utf-8", errors="replace")


def _short(error: Exception) -> str:
    return str(error)[:300]
