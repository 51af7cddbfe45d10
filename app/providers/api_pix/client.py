"""An HTTP client for one PSP's API Pix (the Banco Central's standard, `bacen/pix-api` 2.9.0).

It moves JSON and nothing else: what the answers mean is `mapping`'s business. Every call
goes over mutual TLS with an OAuth2 client-credentials token, fetched once, reused until
shortly before `expires_in` and fetched again (then the call retried once) when the PSP
answers 401. Failures become `ApiPixRefused` or `ApiPixUnavailable`, as `problems` reads
them; the settings are `settings.ApiPixSettings`.

Throttling (429 or 503, from the API or its token endpoint) is retried inside the call, at
most API_PIX_MAX_RETRIES times, after the answer's `Retry-After` or, without one, a jittered
exponential backoff from RETRY_BASE (`app.retries`, as webhook deliveries), but only while
the wait is at most API_PIX_MAX_RETRY_WAIT_SECONDS: a longer `Retry-After` gives up at once
with `ApiPixUnavailable.retry_after` set, for a caller that comes back later (a job).
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import requests

from app import retries
from app.pix.identifiers import END_TO_END_PATTERN, TXID_PATTERN
from app.providers.api_pix.mapping import COB, COB_KINDS, DEVOLUCAO_ID_PATTERN
from app.providers.api_pix.problems import (
    THROTTLED_STATUSES,
    ApiPixUnavailable,
    read_answer,
    token_error,
    usable_token,
)
from app.providers.api_pix.settings import ApiPixSettings

log = logging.getLogger(__name__)

# Refresh this much before the token's end (at most a tenth of its life), so a call never
# leaves with a token that dies on the way.
TOKEN_EARLY_REFRESH_SECONDS = 30.0
PAGE_SIZE = 100
# PSPs cap the inicio..fim range of `GET /pix` and `GET /cob[v]`; longer windows are asked
# for in pieces.
MAX_LIST_SPAN = timedelta(hours=24)
# The first wait when the PSP throttles without a Retry-After; doubled at each retry.
RETRY_BASE = timedelta(milliseconds=500)


@dataclass(frozen=True)
class ListingPosition:
    """A page of a listing (`GET /pix`, `GET /cob`): page `page` (from 0) of the span that
    starts at `span_start`. Each page comes with the next one's, which a caller that
    checkpoints stores and passes back as `resume` to go on from there."""

    span_start: datetime
    page: int


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

    def put_cob(self, txid: str, body: dict, kind: str = COB) -> dict:
        """Create the charge `txid` (ours, so a retry after a timeout is safe): an immediate
        one, or one with a due date when `kind` is `cobv`, as every cob call here."""
        return self._request("PUT", _cob_path(kind, txid), json=body)

    def patch_cob(self, txid: str, body: dict, kind: str = COB) -> dict:
        """Revise an active charge, or remove it (`status: REMOVIDA_PELO_USUARIO_RECEBEDOR`)."""
        return self._request("PATCH", _cob_path(kind, txid), json=body)

    def get_cob(self, txid: str, kind: str = COB) -> dict:
        return self._request("GET", _cob_path(kind, txid))

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
        self, inicio: datetime, fim: datetime, status: str | None = None, kind: str = COB
    ) -> Iterator[dict]:
        """Every cob (or cobv) created between `inicio` and `fim` (the standard filters
        `GET /cob` and `GET /cobv` by creation, not by change), only those in `status` when
        given; spans and pages as `iter_pix_pages`."""
        filters = {"status": status} if status else {}
        return _items(self._listed_pages(_kind_path(kind), "cobs", inicio, fim, filters, None))

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
        return read_answer(response, f"{method} {path}", masked)

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
            raise token_error(response)
        value, lifetime = usable_token(response)
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


def _webhook_path(chave: str) -> str:
    """A Pix key may hold `@` or `+` (an e-mail, a phone number): escaped whole."""
    if not isinstance(chave, str) or not chave:
        raise ValueError(f"not a Pix key: {chave!r}")
    return f"/webhook/{quote(chave, safe='')}"


def _kind_path(kind: str) -> str:
    if kind not in COB_KINDS:
        raise ValueError(f"not a kind of charge: {kind!r}")
    return f"/{kind}"


def _cob_path(kind: str, txid: str) -> str:
    return f"{_kind_path(kind)}/{_checked(txid, TXID_PATTERN, 'txid')}"


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
