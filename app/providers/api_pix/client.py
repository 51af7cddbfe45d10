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
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import requests

from app.pix.identifiers import END_TO_END_PATTERN, TXID_PATTERN
from app.providers.api_pix.mapping import DEVOLUCAO_ID_PATTERN
from app.providers.base import ProviderError, ProviderRefused

log = logging.getLogger(__name__)

DEFAULT_SCOPES = "cob.write cob.read pix.write pix.read webhook.write webhook.read"
DEFAULT_TIMEOUT_SECONDS = 10.0
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


class ApiPixRefused(ProviderRefused):
    """The PSP refused for good; `problem` is its RFC 7807 answer (empty when it sent none)."""

    def __init__(self, message: str, code: str, problem: dict, status: int):
        super().__init__(message, code)
        self.problem = problem
        self.status = status


class ApiPixUnavailable(ProviderError):
    """No usable answer (5xx, timeout, connection): whether it happened is unknown."""


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
        timeout = value("timeout_seconds")
        try:
            timeout_seconds = DEFAULT_TIMEOUT_SECONDS if timeout is None else float(timeout)
        except ValueError as error:
            raise ValueError(
                f"{CONFIG_PREFIX}TIMEOUT_SECONDS is not a number: {timeout}"
            ) from error
        if timeout_seconds <= 0:
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
    """One PSP's API Pix; safe to share between threads (the token is fetched under a lock)."""

    def __init__(
        self,
        settings: ApiPixSettings,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.settings = settings
        self.session = session or requests.Session()
        self._clock = clock
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
        """Every Pix received between `inicio` and `fim` (aware datetimes), asked for in
        spans of at most MAX_LIST_SPAN, a page at a time as the caller consumes them. A Pix
        on the boundary of two spans may come twice."""
        return self._listed("/pix", "pix", inicio, fim)

    def iter_cobs(
        self, inicio: datetime, fim: datetime, status: str | None = None
    ) -> Iterator[dict]:
        """Every cob created between `inicio` and `fim` (the standard filters `GET /cob` by
        creation, not by change), only those in `status` when given; spans and pages as
        `iter_pix`."""
        return self._listed("/cob", "cobs", inicio, fim, {"status": status} if status else {})

    def _listed(
        self, path: str, key: str, inicio: datetime, fim: datetime, filters: dict | None = None
    ) -> Iterator[dict]:
        start = inicio
        while True:
            end = min(start + MAX_LIST_SPAN, fim)
            span = {"inicio": _rfc3339(start), "fim": _rfc3339(end)}
            yield from self._pages(path, key, {**(filters or {}), **span})
            if end >= fim:
                return
            start = end

    def _pages(self, path: str, key: str, query: dict) -> Iterator[dict]:
        page = 0
        while True:
            answer = self._request(
                "GET",
                path,
                params={
                    **query,
                    "paginacao.paginaAtual": page,
                    "paginacao.itensPorPagina": PAGE_SIZE,
                },
            )
            items = answer.get(key) or []
            yield from items
            paging = (answer.get("parametros") or {}).get("paginacao") or {}
            pages = paging.get("quantidadeDePaginas")
            page += 1
            if not items or not isinstance(pages, int) or page >= pages:
                return

    def put_webhook(self, chave: str, url: str) -> dict:
        """Ask the PSP to call `url` + `/pix` for every Pix received on the key `chave`."""
        return self._request("PUT", _webhook_path(chave), json={"webhookUrl": url})

    def get_webhook(self, chave: str) -> dict:
        return self._request("GET", _webhook_path(chave))

    def put_devolucao(self, e2eid: str, refund_id: str, body: dict) -> dict:
        """Ask for a refund of `e2eid`; `refund_id` is ours, so a retry asks only once."""
        return self._request("PUT", _devolucao_path(e2eid, refund_id), json=body)

    def get_devolucao(self, e2eid: str, refund_id: str) -> dict:
        return self._request("GET", _devolucao_path(e2eid, refund_id))

    def _request(self, method: str, path: str, **kwargs) -> dict:
        """Send with a valid token; on 401 fetch a new one and send once more."""
        token = self._valid_token()
        response = self._send(method, path, token, **kwargs)
        if response.status_code == 401:
            self._forget(token)
            response = self._send(method, path, self._valid_token(), **kwargs)
        return _answer(response, f"{method} {path}")

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


def _answer(response: requests.Response, what: str) -> dict:
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
    message = f"{what}: {_problem_message(problem, status)}"
    code = _problem_code(problem, status)
    if status in REFUSED_CREDENTIAL_STATUSES:  # even with a fresh token (`_request`)
        raise _credentials_refused(message, code, status)
    if status >= 500 or status in RETRYABLE_CLIENT_STATUSES:
        raise ApiPixUnavailable(message, code=code)
    raise ApiPixRefused(message, code=code, problem=problem, status=status)


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


def _problem_message(problem: dict, status: int) -> str:
    parts = [problem.get(name) for name in ("title", "detail")]
    text = ": ".join(part for part in parts if isinstance(part, str) and part)
    return text or f"HTTP {status}"


def _problem_code(problem: dict, status: int) -> str:
    """`https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida` → `CobOperacaoInvalida`."""
    kind = problem.get("type")
    if isinstance(kind, str) and kind and kind != "about:blank":
        return kind.rstrip("/").rsplit("/", 1)[-1]
    return str(status)


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
    code = str(answer.get("error") or status)
    message = f"The PSP refused the token request ({code})."
    if status >= 500 or status in RETRYABLE_CLIENT_STATUSES:
        return ApiPixUnavailable(message, code=code)
    return _credentials_refused(message, code, status)


def _credentials_refused(message: str, code: str, status: int) -> ApiPixUnavailable:
    """Our misconfiguration, not the request's fault: unavailable (retried, never failed for
    good) and an error for operations."""
    log.error(
        "The PSP refuses our API Pix credentials or scopes; check the API_PIX_* settings",
        extra={"status": status, "code": code},
    )
    return ApiPixUnavailable(message, code=code)


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
