"""An HTTP client for one PSP's API Pix (the Banco Central's standard, `bacen/pix-api` 2.9.0).

It moves JSON and nothing else: what the answers mean is `mapping`'s business. Every call
goes over mutual TLS with an OAuth2 client-credentials token, fetched once, reused until
shortly before `expires_in` and fetched again (then the call retried once) when the PSP
answers 401. Failures become the provider errors the services already handle:

- a 4xx answer (RFC 7807 `application/problem+json`) → `ApiPixRefused`: nothing happened;
  `code` is the problem type's name (`CobOperacaoInvalida`), `problem` the whole answer;
- 5xx, 408, 429, a timeout or a broken connection → `ApiPixUnavailable`: the outcome is
  unknown, retry with the same txid or devolução id (both are ours, so a retry is safe);
- our credentials refused (401 or 403 with a fresh token, a 4xx from the token endpoint: a
  bad client, a missing scope) → `ApiPixUnavailable` and an ERROR in the log: the setup is
  wrong, not the merchant's request, so nothing is failed for good while it is fixed.

Both errors carry the problem's `violacoes` as `violations` ((propriedade, razao) pairs; the
`valor` each may echo, a payer's document say, is never kept) and its `correlationId` (else
the answer's `X-Correlation-Id` or `X-Request-Id`), which the PSP's support asks for. Their
message, which reaches merchants (a failed charge's `metadata.failure.reason`, a refund's
failure reason, a 503's text), names the request, the title, the violations and the
correlation id; the `detail` only for a refusal of the request itself (a 4xx), where it
describes what the merchant sent, never for an outage or refused credentials, where it would
describe the PSP's insides or our client and scopes. Every text is cleaned of control
characters and capped, so a hostile PSP can neither flood nor forge our messages and logs,
and every problem is logged at WARNING with them as fields.

Throttling (429 or 503, from the API or its token endpoint) is retried inside the call, at
most API_PIX_MAX_RETRIES times, after the answer's `Retry-After` or, without one, a jittered
exponential backoff from RETRY_BASE (`app.retries`, as webhook deliveries), but only while
the wait is at most API_PIX_MAX_RETRY_WAIT_SECONDS: a longer `Retry-After` gives up at once
with `ApiPixUnavailable.retry_after` set, for a caller that comes back later (a job).

Settings, read by `ApiPixSettings.from_config` from a mapping (the environment, say):

    API_PIX_BASE_URL          the PSP's API root, e.g. https://pix.example.com/api/v2
    API_PIX_TOKEN_URL         its OAuth2 token endpoint
    API_PIX_CLIENT_ID         OAuth2 client id
    API_PIX_CLIENT_SECRET     OAuth2 client secret (never logged, never in repr)
    API_PIX_RECEIVER_PIX_KEY  the receiver's Pix key, the `chave` of every cob
    API_PIX_SCOPES            default "cob.write cob.read pix.write pix.read webhook.write
                              webhook.read"
    API_PIX_CERT_PATH         client certificate (PEM) for mutual TLS
    API_PIX_KEY_PATH          its private key, when not inside the certificate file
    API_PIX_CA_PATH           CA bundle that signs the PSP's server certificate
    API_PIX_TIMEOUT_SECONDS   per request, default 10
    API_PIX_MAX_RETRIES       retries of a throttled call (429, 503) inside it, default 2
    API_PIX_MAX_RETRY_WAIT_SECONDS
                              the longest wait before such a retry, default 2
"""

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from urllib.parse import quote

import requests

from app import retries
from app.pix.identifiers import END_TO_END_PATTERN, TXID_PATTERN
from app.providers.api_pix.mapping import DEVOLUCAO_ID_PATTERN
from app.providers.base import ProviderError, ProviderRefused

log = logging.getLogger(__name__)

DEFAULT_SCOPES = "cob.write cob.read pix.write pix.read webhook.write webhook.read"
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_WAIT_SECONDS = 2.0
CONFIG_PREFIX = "API_PIX_"
# Refresh this much before the token's end (at most a tenth of its life), so a call never
# leaves with a token that dies on the way.
TOKEN_EARLY_REFRESH_SECONDS = 30.0
PAGE_SIZE = 100
# PSPs cap the inicio..fim range of `GET /pix` and `GET /cob`; longer windows are asked
# for in pieces.
MAX_LIST_SPAN = timedelta(hours=24)
PROBLEM_JSON = "application/problem+json"
# 4xx answers that say "not now" rather than "never": the operation may be retried.
RETRYABLE_CLIENT_STATUSES = frozenset({408, 429})
# Answers that refuse us, not the request: no token, or a token without the scope.
REFUSED_CREDENTIAL_STATUSES = frozenset({401, 403})
# "Not now, and here is when" (`Retry-After`): retried inside the call when the wait is short.
THROTTLED_STATUSES = frozenset({429, 503})
# The first wait when the PSP throttles without a Retry-After; doubled at each retry.
RETRY_BASE = timedelta(milliseconds=500)
# The longest Retry-After believed; a PSP asking for more is asked again after this.
MAX_RETRY_AFTER = timedelta(hours=1)
CORRELATION_HEADERS = ("X-Correlation-Id", "X-Request-Id")
# What a PSP's problem may put in our messages, charge metadata and logs, at most. A message
# fits a refund's 500-character failure reason with its prefix, correlation id included.
MAX_PROBLEM_TEXT = 300
MAX_NAME_LENGTH = 100  # an error code, a field's name, a correlation id
MAX_VIOLATIONS = 10
MAX_MESSAGE_LENGTH = 400
MASK = "***"

# A problem's `violacoes`: (propriedade, razao) pairs.
Violations = tuple[tuple[str, str], ...]


class ApiPixRefused(ProviderRefused):
    """The PSP refused for good; `problem` is its RFC 7807 answer (empty when it sent none),
    `violations` and `correlation_id` read from it as the module's doc says."""

    def __init__(
        self,
        message: str,
        code: str,
        problem: dict,
        status: int,
        violations: Violations = (),
        correlation_id: str | None = None,
    ):
        super().__init__(message, code)
        self.problem = problem
        self.status = status
        self.violations = violations
        self.correlation_id = correlation_id


class ApiPixUnavailable(ProviderError):
    """No usable answer (5xx, 408, 429, timeout, connection): whether it happened is unknown.
    `status` is the PSP's answer (None when none came), `retry_after` the wait it asked for
    (its `Retry-After`, None when it gave none), for a caller that tries again later."""

    def __init__(
        self,
        message: str,
        code: str,
        *,
        status: int | None = None,
        violations: Violations = (),
        correlation_id: str | None = None,
        retry_after: timedelta | None = None,
    ):
        super().__init__(message, code)
        self.status = status
        self.violations = violations
        self.correlation_id = correlation_id
        self.retry_after = retry_after


ProblemError = TypeVar("ProblemError", ApiPixRefused, ApiPixUnavailable)


@dataclass(frozen=True)
class ListingPosition:
    """A page of a listing (`GET /pix`, `GET /cob`): page `page` (from 0) of the span that
    starts at `span_start`. Each page comes with the next one's, which a caller that
    checkpoints stores and passes back as `resume` to go on from there."""

    span_start: datetime
    page: int


@dataclass(frozen=True)
class ApiPixSettings:
    base_url: str
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    receiver_pix_key: str
    scopes: str = DEFAULT_SCOPES
    cert_path: str | None = None
    key_path: str | None = None
    ca_path: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    max_retry_wait_seconds: float = DEFAULT_MAX_RETRY_WAIT_SECONDS

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "ApiPixSettings":
        """Read the `API_PIX_*` keys; a missing required one is a ValueError naming it."""

        def value(name: str) -> str | None:
            raw = config.get(CONFIG_PREFIX + name.upper())
            return None if raw in (None, "") else str(raw)

        required = ("base_url", "token_url", "client_id", "client_secret", "receiver_pix_key")
        missing = [CONFIG_PREFIX + name.upper() for name in required if value(name) is None]
        if missing:
            raise ValueError(f"API Pix settings missing: {', '.join(missing)}")

        def number(name: str, default: float, kind: type = float) -> float:
            raw, key = value(name), CONFIG_PREFIX + name.upper()
            whole = "whole " if kind is int else ""
            try:
                parsed = default if raw is None else kind(raw)
            except ValueError as error:
                raise ValueError(f"{key} is not a {whole}number: {raw}") from error
            if not math.isfinite(parsed) or parsed < 0:
                raise ValueError(f"{key} must be a non-negative {whole}number: {raw}")
            return parsed

        timeout_seconds = number("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
        if timeout_seconds == 0:
            raise ValueError(f"{CONFIG_PREFIX}TIMEOUT_SECONDS must be positive")
        if value("key_path") and not value("cert_path"):
            raise ValueError(f"{CONFIG_PREFIX}KEY_PATH needs {CONFIG_PREFIX}CERT_PATH")
        return cls(
            base_url=value("base_url").rstrip("/"),
            token_url=value("token_url"),
            client_id=value("client_id"),
            client_secret=value("client_secret"),
            receiver_pix_key=value("receiver_pix_key"),
            scopes=value("scopes") or DEFAULT_SCOPES,
            cert_path=value("cert_path"),
            key_path=value("key_path"),
            ca_path=value("ca_path"),
            timeout_seconds=timeout_seconds,
            max_retries=number("max_retries", DEFAULT_MAX_RETRIES, int),
            max_retry_wait_seconds=number("max_retry_wait_seconds", DEFAULT_MAX_RETRY_WAIT_SECONDS),
        )

    def requests_options(self) -> dict:
        """The TLS and timeout options of every request: the client certificate (`cert`,
        a pair when the key is apart) and the CA bundle (`verify`), given per request so
        REQUESTS_CA_BUNDLE in the environment cannot replace the PSP's CA."""
        cert = (self.cert_path, self.key_path) if self.key_path else self.cert_path
        options = {"timeout": self.timeout_seconds, "verify": self.ca_path or True}
        if cert:
            options["cert"] = cert
        return options


@dataclass
class _Token:
    value: str
    refresh_at: float


class ApiPixClient:
    """One PSP's API Pix; safe to share between threads (the token is fetched under a lock).
    `clock` and `sleep` are injectable, so tests expire tokens and wait out throttling
    without waiting."""

    def __init__(
        self,
        settings: ApiPixSettings,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings = settings
        self.session = session or requests.Session()
        self._clock = clock
        self._sleep = sleep
        self._token: _Token | None = None
        self._token_lock = threading.Lock()

    def put_cob(self, txid: str, body: dict) -> dict:
        """Create the immediate charge `txid` (ours, so a retry after a timeout is safe)."""
        return self._request("PUT", f"/cob/{_checked(txid, TXID_PATTERN, 'txid')}", json=body)

    def patch_cob(self, txid: str, body: dict) -> dict:
        """Revise an active charge, or remove it (`status: REMOVIDA_PELO_USUARIO_RECEBEDOR`)."""
        return self._request("PATCH", f"/cob/{_checked(txid, TXID_PATTERN, 'txid')}", json=body)

    def get_cob(self, txid: str) -> dict:
        return self._request("GET", f"/cob/{_checked(txid, TXID_PATTERN, 'txid')}")

    def get_pix(self, e2eid: str) -> dict:
        return self._request("GET", f"/pix/{_checked(e2eid, END_TO_END_PATTERN, 'e2eid')}")

    def iter_pix(self, inicio: datetime, fim: datetime) -> Iterator[dict]:
        """Every Pix received between `inicio` and `fim` (aware datetimes), as
        `iter_pix_pages` lists them, one at a time."""
        return _items(self.iter_pix_pages(inicio, fim))

    def iter_pix_pages(
        self, inicio: datetime, fim: datetime, resume: ListingPosition | None = None
    ) -> Iterator[tuple[list[dict], ListingPosition | None]]:
        """The Pix received between `inicio` and `fim` (aware datetimes), asked for in spans
        of at most MAX_LIST_SPAN, a page at a time as the caller consumes them: each page's
        items with the position of the next page (None after the last), which `resume`
        starts from. A Pix on the boundary of two spans may come twice."""
        return self._listed_pages("/pix", "pix", inicio, fim, {}, resume)

    def iter_cobs(
        self, inicio: datetime, fim: datetime, status: str | None = None
    ) -> Iterator[dict]:
        """Every cob created between `inicio` and `fim` (the standard filters `GET /cob` by
        creation, not by change), only those in `status` when given; spans and pages as
        `iter_pix_pages`."""
        filters = {"status": status} if status else {}
        return _items(self._listed_pages("/cob", "cobs", inicio, fim, filters, None))

    def _listed_pages(
        self,
        path: str,
        key: str,
        inicio: datetime,
        fim: datetime,
        filters: dict,
        resume: ListingPosition | None,
    ) -> Iterator[tuple[list[dict], ListingPosition | None]]:
        if resume is not None and not inicio <= resume.span_start < fim:
            raise ValueError(f"resume {resume} is outside {inicio}..{fim}")
        position = resume or ListingPosition(span_start=inicio, page=0)
        while position is not None:
            end = min(position.span_start + MAX_LIST_SPAN, fim)
            answer = self._request(
                "GET",
                path,
                params={
                    **filters,
                    "inicio": _rfc3339(position.span_start),
                    "fim": _rfc3339(end),
                    "paginacao.paginaAtual": position.page,
                    "paginacao.itensPorPagina": PAGE_SIZE,
                },
            )
            items = answer.get(key) or []
            if not isinstance(items, list):
                raise ApiPixUnavailable(
                    f"The PSP's answer to GET {path} has no list.", "bad_answer"
                )
            paging = (answer.get("parametros") or {}).get("paginacao") or {}
            pages = paging.get("quantidadeDePaginas")
            if items and isinstance(pages, int) and position.page + 1 < pages:
                following = ListingPosition(position.span_start, position.page + 1)
            elif end < fim:
                following = ListingPosition(end, 0)
            else:
                following = None
            yield items, following
            position = following

    def put_webhook(self, chave: str, url: str) -> dict:
        """Ask the PSP to call `url` + `/pix` for every Pix received on the key `chave`. The
        URL carries our webhook secret, so a problem echoing it has it masked."""
        return self._request("PUT", _webhook_path(chave), json={"webhookUrl": url}, masked=(url,))

    def get_webhook(self, chave: str) -> dict:
        return self._request("GET", _webhook_path(chave))

    def put_devolucao(self, e2eid: str, refund_id: str, body: dict) -> dict:
        """Ask for a refund of `e2eid`; `refund_id` is ours, so a retry asks only once."""
        return self._request("PUT", _devolucao_path(e2eid, refund_id), json=body)

    def get_devolucao(self, e2eid: str, refund_id: str) -> dict:
        return self._request("GET", _devolucao_path(e2eid, refund_id))

    def _request(self, method: str, path: str, masked: tuple[str, ...] = (), **kwargs) -> dict:
        """Send, and again after a short wait while the PSP throttles (`_retry_wait`); texts
        in `masked` never leave a problem's answer (see `put_webhook`)."""
        attempts_made = 0
        while True:
            try:
                return self._authorised(method, path, masked, **kwargs)
            except ApiPixUnavailable as error:
                wait = self._retry_wait(error, attempts_made)
                if wait is None:
                    raise
                attempts_made += 1
                log.info(
                    "API Pix %s %s throttled; sent again in %.2f s",
                    method,
                    path,
                    wait.total_seconds(),
                    extra={"status": error.status, "retry": attempts_made},
                )
                self._sleep(wait.total_seconds())

    def _authorised(self, method: str, path: str, masked: tuple[str, ...], **kwargs) -> dict:
        """Send with a valid token; on 401 fetch a new one and send once more."""
        token = self._valid_token()
        response = self._send(method, path, token, **kwargs)
        if response.status_code == 401:
            self._forget(token)
            response = self._send(method, path, self._valid_token(), **kwargs)
        return _answer(response, f"{method} {path}", masked)

    def _retry_wait(self, error: ApiPixUnavailable, attempts_made: int) -> timedelta | None:
        """How long to wait before sending again, or None to give up. Only throttling (429,
        503) is retried here, API_PIX_MAX_RETRIES times at most, and only while the wait
        fits API_PIX_MAX_RETRY_WAIT_SECONDS: the PSP's Retry-After, else our own backoff
        (kept within that bound). Anything else is the caller's to retry."""
        if error.status not in THROTTLED_STATUSES or attempts_made >= self.settings.max_retries:
            return None
        bound = timedelta(seconds=self.settings.max_retry_wait_seconds)
        if error.retry_after is None:
            return min(retries.backoff(attempts_made, RETRY_BASE, bound), bound)
        return error.retry_after if error.retry_after <= bound else None

    def _send(self, method: str, path: str, token: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        response = _transport(
            self.session.request,
            method,
            self.settings.base_url + path,
            headers=headers,
            **self.settings.requests_options(),
            **kwargs,
        )
        log.info("API Pix %s %s answered %s", method, path, response.status_code)
        return response

    def _valid_token(self) -> str:
        with self._token_lock:
            if self._token is None or self._clock() >= self._token.refresh_at:
                self._token = self._fetch_token()
            return self._token.value

    def _forget(self, token: str) -> None:
        """Drop the cached token, unless another thread already replaced it."""
        with self._token_lock:
            if self._token is not None and self._token.value == token:
                self._token = None

    def _fetch_token(self) -> _Token:
        settings = self.settings
        requested_at = self._clock()
        response = _transport(
            self.session.post,
            settings.token_url,
            data={"grant_type": "client_credentials", "scope": settings.scopes},
            auth=(settings.client_id, settings.client_secret),
            headers={"Accept": "application/json"},
            **settings.requests_options(),
        )
        log.info("API Pix token request answered %s", response.status_code)
        if response.status_code >= 400:
            raise _token_error(response)
        value, lifetime = _usable_token(response)
        early = min(TOKEN_EARLY_REFRESH_SECONDS, lifetime / 10)
        return _Token(value=value, refresh_at=requested_at + lifetime - early)


def _transport(send: Callable[..., requests.Response], *args, **kwargs) -> requests.Response:
    try:
        return send(*args, **kwargs)
    except requests.Timeout as error:
        raise ApiPixUnavailable("The PSP did not answer in time.", code="timeout") from error
    except requests.ConnectionError as error:
        raise ApiPixUnavailable(
            "The PSP could not be reached (connection or TLS failure).", code="connection_error"
        ) from error
    except requests.RequestException as error:
        raise ApiPixUnavailable(
            f"The request to the PSP failed ({type(error).__name__}).", code="request_error"
        ) from error


def _items(pages: Iterator[tuple[list[dict], ListingPosition | None]]) -> Iterator[dict]:
    for items, _following in pages:
        yield from items


def _answer(response: requests.Response, what: str, masked: tuple[str, ...] = ()) -> dict:
    status = response.status_code
    if 200 <= status < 300:
        if status == 204 or not response.content:
            return {}
        try:
            answer = response.json()
        except ValueError as error:
            raise ApiPixUnavailable(
                f"The PSP's answer to {what} is not JSON.", code="bad_answer"
            ) from error
        if not isinstance(answer, dict):
            raise ApiPixUnavailable(f"The PSP's answer to {what} is not an object.", "bad_answer")
        return answer
    problem = _problem(response)
    code = _problem_code(problem, status)
    violations = _violations(problem.get("violacoes"), masked)
    in_body = _text(problem, "correlationId", masked, MAX_NAME_LENGTH)
    correlation_id = in_body or _header_correlation_id(response)
    refused = status < 500 and status not in RETRYABLE_CLIENT_STATUSES | REFUSED_CREDENTIAL_STATUSES
    # The detail only where it describes the merchant's request (see the module's doc).
    parts = (_text(problem, "title", masked), _text(problem, "detail", masked) if refused else None)
    summary = ": ".join(part for part in parts if part) or f"HTTP {status}"
    message = _message(what, summary, violations, correlation_id)
    if refused:
        raise _logged(ApiPixRefused(message, code, problem, status, violations, correlation_id))
    unavailable = _logged(
        ApiPixUnavailable(
            message,
            code,
            status=status,
            violations=violations,
            correlation_id=correlation_id,
            retry_after=_retry_after(response),
        )
    )
    if status in REFUSED_CREDENTIAL_STATUSES:  # even with a fresh token (`_authorised`)
        raise _credentials_refused(unavailable)
    raise unavailable


def _problem(response: requests.Response) -> dict:
    """The RFC 7807 body, or {} when the answer carries none (an HTML error page, say)."""
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type not in (PROBLEM_JSON, "application/json"):
        return {}
    try:
        problem = response.json()
    except ValueError:
        return {}
    return problem if isinstance(problem, dict) else {}


def _text(
    problem: dict, name: str, masked: tuple[str, ...], limit: int = MAX_PROBLEM_TEXT
) -> str | None:
    """The problem's text field `name`, cleaned and capped; None when absent, empty or junk."""
    value = problem.get(name)
    return (_cleaned(value, limit, masked) or None) if isinstance(value, str) else None


def _problem_code(problem: dict, status: int) -> str:
    """`https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida` → `CobOperacaoInvalida`."""
    kind = problem.get("type")
    if isinstance(kind, str) and kind and kind != "about:blank":
        return _cleaned(kind.rstrip("/").rsplit("/", 1)[-1], MAX_NAME_LENGTH) or str(status)
    return str(status)


def _violations(violacoes: object, masked: tuple[str, ...]) -> Violations:
    """The problem's `violacoes` as (propriedade, razao) pairs, at most MAX_VIOLATIONS: an
    entry without a textual `razao` is junk and skipped, a missing `propriedade` is "", and
    `valor` is never read (it echoes what we sent: a payer's document, say)."""
    if not isinstance(violacoes, list):
        return ()
    pairs = []
    for violacao in violacoes:
        if len(pairs) == MAX_VIOLATIONS:
            break
        if not isinstance(violacao, dict) or not isinstance(violacao.get("razao"), str):
            continue
        propriedade = violacao.get("propriedade")
        propriedade = propriedade if isinstance(propriedade, str) else ""
        razao = _cleaned(violacao["razao"], MAX_PROBLEM_TEXT, masked)
        if razao:
            pairs.append((_cleaned(propriedade, MAX_NAME_LENGTH, masked), razao))
    return tuple(pairs)


def _header_correlation_id(response: requests.Response) -> str | None:
    for name in CORRELATION_HEADERS:
        value = _cleaned(response.headers.get(name) or "", MAX_NAME_LENGTH)
        if value:
            return value
    return None


def _retry_after(response: requests.Response) -> timedelta | None:
    """The wait a throttling answer asks for; None from any other answer or without one."""
    if response.status_code not in THROTTLED_STATUSES:
        return None
    return retries.retry_after(response.headers.get("Retry-After"), MAX_RETRY_AFTER)


def _message(what: str, summary: str, violations: Violations, correlation_id: str | None) -> str:
    """`PUT /cob/…: Cobrança inválida: … (valor.original: deve ser maior que zero; chave: …)
    [correlationId abc]`, capped with the correlation id kept whole."""
    named = "; ".join(f"{field}: {reason}" if field else reason for field, reason in violations)
    text = f"{what}: {summary}" + (f" ({named})" if named else "")
    suffix = f" [correlationId {correlation_id}]" if correlation_id else ""
    return _capped(text, MAX_MESSAGE_LENGTH - len(suffix)) + suffix


def _cleaned(text: str, limit: int, masked: tuple[str, ...] = ()) -> str:
    """`text` with each of `masked` replaced, control characters and runs of white space
    made one space, and at most `limit` characters."""
    for secret in filter(None, masked):  # "" would be found between every character
        text = text.replace(secret, MASK)
    printable = "".join(c if c.isprintable() else " " for c in text[: limit * 2])
    return _capped(" ".join(printable.split()), limit)


def _capped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _logged(error: ProblemError) -> ProblemError:
    """Every PSP problem at WARNING, its parts as fields for operations."""
    wait = error.retry_after if isinstance(error, ApiPixUnavailable) else None
    log.warning(
        "API Pix problem: %s",
        error.message,
        extra={
            "status": error.status,
            "code": error.code,
            "violations": error.violations,
            "correlation_id": error.correlation_id,
            "retry_after_seconds": None if wait is None else wait.total_seconds(),
        },
    )
    return error


def _usable_token(response: requests.Response) -> tuple[str, float]:
    """The access token and its lifetime in seconds, or ApiPixUnavailable."""
    try:
        answer = response.json()
        value, lifetime = answer["access_token"], float(answer["expires_in"])
    except (ValueError, KeyError, TypeError):
        value, lifetime = None, 0.0
    if not isinstance(value, str) or not value or lifetime <= 0:
        raise ApiPixUnavailable(
            "The PSP's token endpoint answered without a usable token.", code="bad_token"
        )
    return value, lifetime


def _token_error(response: requests.Response) -> ApiPixUnavailable:
    """OAuth2 errors (RFC 6749 `{error, error_description}`): a 4xx means our credentials or
    scopes were refused, which only fixing the settings cures."""
    try:
        answer = response.json()
    except ValueError:
        answer = {}
    answer = answer if isinstance(answer, dict) else {}
    status = response.status_code
    error = answer.get("error")
    code = (_cleaned(error, MAX_NAME_LENGTH) if isinstance(error, str) else "") or str(status)
    correlation_id = _header_correlation_id(response)
    summary = f"HTTP {status}" + (f" {code}" if code != str(status) else "")
    message = _message("The PSP's token endpoint", summary, (), correlation_id)
    unavailable = _logged(
        ApiPixUnavailable(
            message,
            code,
            status=status,
            correlation_id=correlation_id,
            retry_after=_retry_after(response),
        )
    )
    if status >= 500 or status in RETRYABLE_CLIENT_STATUSES:
        return unavailable
    return _credentials_refused(unavailable)


def _credentials_refused(unavailable: ApiPixUnavailable) -> ApiPixUnavailable:
    """Our misconfiguration, not the request's fault: unavailable (retried, never failed for
    good) and an error for operations."""
    log.error(
        "The PSP refuses our API Pix credentials or scopes; check the API_PIX_* settings",
        extra={"status": unavailable.status, "code": unavailable.code},
    )
    return unavailable


def _webhook_path(chave: str) -> str:
    """A Pix key may hold `@` or `+` (an e-mail, a phone number): escaped whole."""
    if not isinstance(chave, str) or not chave:
        raise ValueError(f"not a Pix key: {chave!r}")
    return f"/webhook/{quote(chave, safe='')}"


def _devolucao_path(e2eid: str, refund_id: str) -> str:
    e2eid = _checked(e2eid, END_TO_END_PATTERN, "e2eid")
    return f"/pix/{e2eid}/devolucao/{_checked(refund_id, DEVOLUCAO_ID_PATTERN, 'refund id')}"


def _checked(value: str, pattern, what: str) -> str:
    """Ids go into paths: anything but the standard's charset is a bug on our side."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValueError(f"not a valid {what}: {value!r}")
    return value


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("inicio and fim must be aware datetimes")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
