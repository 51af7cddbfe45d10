"""Reading a PSP's answer: its data, or the error its RFC 7807 problem (or its token
endpoint's OAuth2 error) means, cleaned for merchants and logged for operations.

Failures become the provider errors the services already handle:

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
"""

import logging
from datetime import timedelta
from typing import TypeVar

import requests

from app import retries
from app.providers.base import ProviderError, ProviderRefused

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
# 4xx answers that say "not now" rather than "never": the operation may be retried.
RETRYABLE_CLIENT_STATUSES = frozenset({408, 429})
# Answers that refuse us, not the request: no token, or a token without the scope.
REFUSED_CREDENTIAL_STATUSES = frozenset({401, 403})
# "Not now, and here is when" (`Retry-After`): retried inside the call when the wait is short.
THROTTLED_STATUSES = frozenset({429, 503})
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


def read_answer(response: requests.Response, what: str, masked: tuple[str, ...] = ()) -> dict:
    """A 2xx answer's JSON object ({} when it has no body); any other answer, or one that is
    not an object, raises the error it means. `what` names the request in the message;
    texts in `masked` never leave the problem."""
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
    if status in REFUSED_CREDENTIAL_STATUSES:  # even with a fresh token (`client._authorised`)
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


def usable_token(response: requests.Response) -> tuple[str, float]:
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


def token_error(response: requests.Response) -> ApiPixUnavailable:
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
