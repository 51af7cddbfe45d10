"""A fake PSP speaking the Banco Central's API Pix, on a real HTTP server on localhost.

It holds cobs and cobvs (charges with a due date, under the same txid space), received Pix
and devoluções in memory and answers in the standard's shapes, errors included (RFC 7807
`application/problem+json` with `type`, `title`, `status`, `detail`, and `violacoes` for a
charge that breaks the rules its tag's `Cob[V]OperacaoInvalida` lists). Tests drive it with
`pay`, `remove_cob`, `settle_devolucao`, `fail_next`, `revoke_tokens` and read what it was
asked in `requests`.

It is strict: every request it receives, every answer it gives and every webhook body it
builds is checked against the standard (`api_pix_standard`). What breaks it lands in
`violations` (never raised in the server thread), and `stop()` fails when any did, so every
test that starts a fake checks it. With `tls=True` it serves HTTPS and requires a client
certificate, so the adapter's mutual-TLS settings are proven in a real handshake.
"""

import base64
import json
import re
import secrets
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from app.business_days import sao_paulo_day
from app.pix import brcode
from app.pix.identifiers import TXID_PATTERN, new_end_to_end_id, new_return_id
from app.providers.api_pix.mapping import (
    COB,
    COBV,
    DEVOLUCAO_ID_PATTERN,
    REMOVED_BY_PSP,
    REMOVED_BY_RECEIVER,
    amount_from_valor,
    valor,
)
from tests.support import api_pix_standard as standard

CLIENT_ID = "acme-client"
CLIENT_SECRET = "acme-secret-not-for-logs"
RECEIVER_KEY = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
RECEIVER_CNPJ = "11222333000181"
# A cobv names its receiver, address included (`CobVGerada.recebedor`).
RECEBEDOR = {
    "cnpj": RECEIVER_CNPJ,
    "nome": "Acme Loja Ltda",
    "logradouro": "Avenida Paulista, 1000",
    "cidade": "São Paulo",
    "uf": "SP",
    "cep": "01310100",
}
PSP_ISPB = "12345678"
PAYER_ISPB = "87654321"
ERROR_TYPE = "https://pix.bcb.gov.br/api/v2/error/"
LOCATION_HOST = "pix.example.com/qr/v2/"
DEFAULT_EXPIRACAO = 86400
# How long a simulated stall (`fail_next("timeout")`) holds its answer, and the client timeout
# the tests use: well below the stall, yet long enough that a loaded CI machine answering an
# ordinary request late is not taken for a stall (0.5 s was not, once).
STALL_SECONDS = 3.0
CLIENT_TIMEOUT_SECONDS = 2.0
DEFAULT_VALIDADE_APOS_VENCIMENTO = 30
# `CobVValor` modalidades whose valorPerc is a percentage (the others are reais).
PERCENT_DESCONTOS = frozenset({2, 5, 6})
FULL_PERCENT = 10_000  # 100.00 read as a valor
# The API Pix error a simulated failure answers with, by status.
FAILURE_KINDS = {
    400: ("RequisicaoInvalida", "Requisição inválida"),
    401: ("AcessoNegado", "Não autorizado"),
    403: ("AcessoNegado", "Acesso negado"),
    429: ("ServicoIndisponivel", "Muitas requisições"),
    500: ("ErroInternoDoServidor", "Erro interno do servidor"),
    503: ("ServicoIndisponivel", "Serviço indisponível"),
    504: ("IndisponibilidadePorTempoEsgotado", "Tempo esgotado"),
}
# The Retry-After of a simulated 429 or 503 unless a test says otherwise: longer than the
# client waits inside a call, so one such failure is an outage the caller sees.
OUTAGE_RETRY_AFTER = "60"
# The problem an invalid request gets, by route (the standard's per-tag errors); a charge's
# routes take their kind's (`TAGS`).
REQUEST_PROBLEMS = {
    "list_pix": ("PixConsultaInvalida", "Consulta inválida"),
    "put_devolucao": ("PixDevolucaoInvalida", "Devolução inválida"),
    "put_webhook": ("WebhookOperacaoInvalida", "Webhook inválido"),
}
# Marks, in a request's WSGI environ, the status `fail_next` made it answer.
INJECTED = "fake_api_pix.injected_status"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

URLS = Map(
    [
        Rule("/oauth/token", methods=["POST"], endpoint="token"),
        Rule("/<any(cob, cobv):kind>", methods=["GET"], endpoint="list_cobs"),
        Rule("/<any(cob, cobv):kind>/<txid>", methods=["PUT"], endpoint="put_cob"),
        Rule("/<any(cob, cobv):kind>/<txid>", methods=["PATCH"], endpoint="patch_cob"),
        Rule("/<any(cob, cobv):kind>/<txid>", methods=["GET"], endpoint="get_cob"),
        Rule("/pix", methods=["GET"], endpoint="list_pix"),
        Rule("/pix/<e2eid>", methods=["GET"], endpoint="get_pix"),
        Rule("/pix/<e2eid>/devolucao/<refund_id>", methods=["PUT"], endpoint="put_devolucao"),
        Rule("/pix/<e2eid>/devolucao/<refund_id>", methods=["GET"], endpoint="get_devolucao"),
        Rule("/webhook/<chave>", methods=["PUT"], endpoint="put_webhook"),
        Rule("/webhook/<chave>", methods=["GET"], endpoint="get_webhook"),
    ],
    strict_slashes=False,
)


class Problem(Exception):
    """An RFC 7807 answer in the standard's `Problema` shape; `kind` is the API Pix error
    name (`CobOperacaoInvalida`), `violacoes` a list of {"propriedade", "razao"}."""

    def __init__(
        self,
        status: int,
        kind: str,
        title: str,
        detail: str,
        violacoes: list[dict] | None = None,
        correlation_id: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail = status, kind, title, detail
        self.violacoes, self.correlation_id = violacoes, correlation_id
        self.headers = headers or {}

    @classmethod
    def simulated(
        cls,
        status: int,
        retry_after: str | None = OUTAGE_RETRY_AFTER,
        violacoes: list[dict] | None = None,
        correlation_id: str | None = None,
    ) -> "Problem":
        """What a `fail_next` status answers; a 429 or 503 with its `Retry-After`."""
        kind, title = FAILURE_KINDS.get(status, FAILURE_KINDS[500])
        throttled = status in (429, 503) and retry_after is not None
        headers = {"Retry-After": retry_after} if throttled else None
        return cls(status, kind, title, "Falha simulada.", violacoes, correlation_id, headers)

    def response(self) -> Response:
        body = {
            "type": ERROR_TYPE + self.kind,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if self.correlation_id is not None:
            body["correlationId"] = self.correlation_id
        if self.violacoes is not None:
            body["violacoes"] = self.violacoes
        return Response(
            json.dumps(body),
            self.status,
            headers=self.headers,
            content_type="application/problem+json",
        )


@dataclass(frozen=True)
class ChargeTag:
    """The standard's errors of one kind of charge (its tag, `Cob` or `CobV`)."""

    invalid: str
    bad_query: str
    not_found: str

    def refused(self, detail: str, violacoes: list[dict] | None = None) -> Problem:
        return Problem(400, self.invalid, "Cobrança inválida", detail, violacoes)


TAGS = {
    COB: ChargeTag("CobOperacaoInvalida", "CobConsultaInvalida", "CobNaoEncontrado"),
    COBV: ChargeTag("CobVOperacaoInvalida", "CobVConsultaInvalida", "CobVNaoEncontrada"),
}


@dataclass
class RecordedRequest:
    method: str
    path: str
    args: dict
    authorization: str | None
    body: dict | None


@dataclass(frozen=True)
class Violation:
    """Something the standard forbids: `what` is "request" (ours), "answer" or "webhook"
    (the fake's own)."""

    method: str
    path: str
    what: str
    message: str

    def __str__(self) -> str:
        return f"{self.what} {self.method} {self.path}: {self.message}"


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for mutual TLS: the PSP's server certificate comes from one CA
    (`server_ca`, our API_PIX_CA_PATH), the client certificates it accepts from another;
    `stranger_*` is a client certificate from a CA the PSP does not trust."""

    server_ca: Path
    server_chain: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    client_combined: Path
    stranger_combined: Path

    @classmethod
    def make(cls, directory: Path) -> "TlsFiles":
        import trustme  # a test-only dependency, needed only when TLS is asked for

        psp_ca, client_ca, stranger_ca = trustme.CA(), trustme.CA(), trustme.CA()
        server = psp_ca.issue_cert("localhost", "127.0.0.1")
        client = client_ca.issue_cert("acme-client.example.com")
        stranger = stranger_ca.issue_cert("acme-client.example.com")
        files = cls(*(directory / name for name in _TLS_FILE_NAMES))
        psp_ca.cert_pem.write_to_path(str(files.server_ca))
        server.private_key_and_cert_chain_pem.write_to_path(str(files.server_chain))
        client_ca.cert_pem.write_to_path(str(files.client_ca))
        client.cert_chain_pems[0].write_to_path(str(files.client_cert))
        client.private_key_pem.write_to_path(str(files.client_key))
        client.private_key_and_cert_chain_pem.write_to_path(str(files.client_combined))
        stranger.private_key_and_cert_chain_pem.write_to_path(str(files.stranger_combined))
        return files

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_chain)
        context.load_verify_locations(self.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
        return context


_TLS_FILE_NAMES = (
    "psp-ca.pem",
    "psp-server.pem",
    "client-ca.pem",
    "client-cert.pem",
    "client-key.pem",
    "client-combined.pem",
    "stranger-combined.pem",
)


@dataclass
class FakeApiPix:
    """The PSP's books and the test controls. `token_lifetime` is the `expires_in` of new
    tokens; `timeout_delay` how long a `fail_next("timeout")` answer waits."""

    token_lifetime: int = 300
    timeout_delay: float = STALL_SECONDS
    server: object = None
    cobs: dict = field(default_factory=dict)
    pix: dict = field(default_factory=dict)
    webhooks: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    tokens_issued: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    failures: list = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    tls: TlsFiles | None = None
    violations: list[Violation] = field(default_factory=list)
    future_enum_values: set[str] = field(default_factory=set)
    locations_issued: int = 0

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def config(self, *, key_in_cert: bool = False, **overrides) -> dict:
        """`API_PIX_*` settings pointing at this fake (what `ApiPixSettings.from_config` reads).
        Over TLS: the client certificate with its key apart, or (`key_in_cert`) one PEM."""
        settings = {
            "API_PIX_BASE_URL": self.url,
            "API_PIX_TOKEN_URL": f"{self.url}/oauth/token",
            "API_PIX_CLIENT_ID": CLIENT_ID,
            "API_PIX_CLIENT_SECRET": CLIENT_SECRET,
            "API_PIX_RECEIVER_PIX_KEY": RECEIVER_KEY,
            # `pay(payer=...)` reports the payer in the `pagador` extension.
            "API_PIX_PAYER_DOCUMENT_PATH": "pagador",
        }
        if self.tls and key_in_cert:
            settings["API_PIX_CERT_PATH"] = str(self.tls.client_combined)
        elif self.tls:
            settings["API_PIX_CERT_PATH"] = str(self.tls.client_cert)
            settings["API_PIX_KEY_PATH"] = str(self.tls.client_key)
        if self.tls:
            settings["API_PIX_CA_PATH"] = str(self.tls.server_ca)
        return {**settings, **overrides}

    # Test controls

    def fail_next(
        self,
        failure: int | str,
        *,
        after: int = 0,
        retry_after: str | None = OUTAGE_RETRY_AFTER,
        violacoes: list[dict] | None = None,
        correlation_id: str | None = None,
    ) -> None:
        """The next API call (not the token endpoint), or the one after `after` more (the
        second page of a listing, say), answers `failure` (an HTTP status) without acting,
        or, with "timeout", acts and then answers too late. The problem carries `violacoes`
        and `correlationId` when given; a 429 or 503 `Retry-After: retry_after` (None for
        none, so the client backs off on its own)."""
        if failure != "timeout":
            failure = Problem.simulated(failure, retry_after, violacoes, correlation_id)
        with self.lock:
            self.failures.extend([None] * after + [failure])

    def revoke_tokens(self) -> None:
        """Every token issued so far is refused from now on (401)."""
        with self.lock:
            self.tokens.clear()

    def allow_future_enum_value(self, raw: str) -> None:
        """Let answers carry `raw` where the standard has an enum, as a newer release may
        (new enum values are a compatible change clients must accept); nothing else."""
        with self.lock:
            self.future_enum_values.add(raw)

    def pay(
        self,
        txid: str,
        amount: int | None = None,
        payer: dict | None = None,
        at=None,
        extra: dict | None = None,
    ):
        """A payer pays cob `txid` (its own amount unless told; a cobv's original, so tell
        it the day's amount): a received Pix with a new end-to-end id; `payer` ({"cpf"|"cnpj",
        "nome"}) goes in the `pagador` extension, `extra` (more PSP extension fields) is merged
        into the Pix."""
        with self.lock:
            cob = self.cobs[txid]
            amount = amount_from_valor(cob["valor"]["original"]) if amount is None else amount
            received = self._book_pix(amount, txid, payer, at, extra, cob["chave"])
            cob["status"] = "CONCLUIDA"
            cob.setdefault("pix", []).append(
                {name: value for name, value in received.items() if name != "devolucoes"}
            )
            return received

    def receive(self, amount: int, txid: str | None = None, payer: dict | None = None, at=None):
        """A Pix on our key that no cob asked for: a static QR code (no txid) or a txid of
        1-35 characters that is none of ours. `GET /pix` and `GET /pix/{e2eid}` show it."""
        with self.lock:
            return self._book_pix(amount, txid, payer, at, None, RECEIVER_KEY)

    def _book_pix(self, amount: int, txid, payer, at, extra, chave: str) -> dict:
        at = at or datetime.now(UTC)
        received = {
            "endToEndId": new_end_to_end_id(PAYER_ISPB, at),
            "valor": valor(amount),
            "chave": chave,
            "horario": _timestamp(at),
            "infoPagador": "Pedido de teste",
        }
        if txid is not None:
            received["txid"] = txid
        if payer:
            received["pagador"] = payer
        self.pix[received["endToEndId"]] = {**received, **(extra or {}), "devolucoes": []}
        return self.pix[received["endToEndId"]]

    def remove_cob(self, txid: str) -> dict:
        """The PSP removes cob or cobv `txid` itself (`REMOVIDA_PELO_PSP`), as it may at any
        time."""
        with self.lock:
            cob = self.cobs[txid]
            cob["status"] = REMOVED_BY_PSP
            cob["revisao"] += 1
            return _public(cob)

    def settle_devolucao(self, e2eid: str, refund_id: str, status: str = "DEVOLVIDO", motivo=None):
        """The SPI settles (`DEVOLVIDO`) or fails (`NAO_REALIZADO`) a devolução."""
        with self.lock:
            devolucao = self._devolucao(e2eid, refund_id)
            devolucao["status"] = status
            devolucao["horario"]["liquidacao"] = _timestamp(datetime.now(UTC))
            if motivo:
                devolucao["motivo"] = motivo
            return devolucao

    def set_devolucao_status(self, e2eid: str, refund_id: str, raw_status: str) -> dict:
        """Any status, a newer release's included (`allow_future_enum_value` it first)."""
        with self.lock:
            devolucao = self._devolucao(e2eid, refund_id)
            devolucao["status"] = raw_status
            return devolucao

    def webhook_body(self, *e2eids: str) -> dict:
        """What this PSP would POST to `{webhookUrl}/pix` for these Pix (checked too)."""
        with self.lock:
            body = {"pix": [json.loads(json.dumps(self.pix[e2eid])) for e2eid in e2eids]}
            for message in standard.webhook_violations(body, self.future_enum_values):
                self.violations.append(Violation("POST", "{webhookUrl}/pix", "webhook", message))
            return body

    def calls(self, method: str, path_prefix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    def stop(self) -> None:
        """End the server, then fail (AssertionError) if anything broke the standard."""
        self.server.shutdown()
        self.server.server_close()
        self.assert_no_violations()

    def assert_no_violations(self) -> None:
        with self.lock:
            found = [str(violation) for violation in self.violations]
        assert not found, "the API Pix standard was broken:\n" + "\n".join(found)

    # The HTTP surface

    def wsgi(self, environ, start_response):
        request = Request(environ)
        try:
            endpoint, values = URLS.bind_to_environ(environ).match()
            response = self._dispatch(request, endpoint, values)
        except Problem as problem:
            response = problem.response()
        except HTTPException as error:
            problem = Problem(error.code, "RequisicaoInvalida", error.name, "No such route.")
            response = problem.response()
        if request.path != "/oauth/token":
            self._check_answer(request, response)
        return response(environ, start_response)

    def _check_request(self, request: Request, body) -> list[str]:
        """What the request breaks, to refuse it as a PSP would; recorded unless it is an
        allow-listed adapter violation."""
        if request.path == "/oauth/token":
            found = standard.token_request_violations(request.form)
        else:
            found = standard.request_violations(
                request.method,
                request.path,
                request.args.to_dict(flat=False),
                body if request.data else None,
                request.content_type,
            )
        with self.lock:
            self.violations += [
                Violation(request.method, request.path, "request", message)
                for message in found
                if not standard.allowed_adapter_violation(request.method, request.path, message)
            ]
        return found

    def _check_answer(self, request: Request, response: Response) -> None:
        """Record what the answer breaks; a status a test injected on purpose with
        `fail_next` (a PSP or gateway beyond the standard, 409 or 429 say) is its choice."""
        data = response.get_data()
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = data.decode(errors="replace")
        found = standard.response_violations(
            request.method,
            request.path,
            response.status_code,
            body,
            response.content_type,
            self.future_enum_values,
            tolerated_statuses={request.environ[INJECTED]} if INJECTED in request.environ else (),
        )
        with self.lock:
            self.violations += [
                Violation(request.method, request.path, "answer", message) for message in found
            ]

    def _dispatch(self, request: Request, endpoint: str, values: dict) -> Response:
        body = request.get_json(silent=True) if request.data else None
        invalid = self._check_request(request, body)
        with self.lock:
            self.requests.append(
                RecordedRequest(
                    request.method,
                    request.path,
                    dict(request.args),
                    request.headers.get("Authorization"),
                    body if isinstance(body, dict) else None,
                )
            )
        if endpoint == "token":
            return self._token(request)
        self._authorise(request)
        with self.lock:
            failure = self.failures.pop(0) if self.failures else None
        if isinstance(failure, int):  # a status a test put in `failures` itself
            failure = Problem.simulated(failure)
        if isinstance(failure, Problem):
            request.environ[INJECTED] = failure.status
            raise failure
        if request.data and not isinstance(body, dict):
            raise Problem(400, "RequisicaoInvalida", "Requisição inválida", "Corpo não é JSON.")
        if invalid:
            kind, title = _request_problem(endpoint, values)
            raise Problem(400, kind, title, "; ".join(invalid), [{"razao": m} for m in invalid])
        with self.lock:
            status, answer = getattr(self, "_" + endpoint)(body or {}, request, **values)
        if failure == "timeout":
            time.sleep(self.timeout_delay)
        if not answer:  # the standard declares no body (`PUT /webhook/{chave}`)
            return Response(status=status)
        return Response(json.dumps(answer), status, content_type="application/json")

    def _token(self, request: Request) -> Response:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {expected}":
            return _oauth_error(401, "invalid_client")
        if request.form.get("grant_type") != "client_credentials":
            return _oauth_error(400, "unsupported_grant_type")
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = time.monotonic() + self.token_lifetime
            self.tokens_issued += 1
        body = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "scope": request.form.get("scope", ""),
        }
        return Response(json.dumps(body), 200, content_type="application/json")

    def _authorise(self, request: Request) -> None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        with self.lock:
            valid_until = self.tokens.get(token)
        if valid_until is None or time.monotonic() >= valid_until:
            raise Problem(401, "AcessoNegado", "Não autorizado", "Token ausente ou expirado.")

    def _put_cob(self, body: dict, request: Request, kind: str, txid: str):
        tag = TAGS[kind]
        if not TXID_PATTERN.fullmatch(txid):
            raise tag.refused("txid fora do padrão.")
        existing = self.cobs.get(txid)
        if existing is not None and existing["loc"]["tipoCob"] != kind:
            raise tag.refused("O txid já identifica uma cobrança de outro tipo.")
        now = datetime.now(UTC)
        fields = _charge_fields(kind, body, sao_paulo_day(_created(existing) if existing else now))
        if existing is not None:
            # The standard's PUT creates or revises: the same request again changes
            # nothing; another one revises an ATIVA cob and is refused on any other.
            if existing["request"] != fields:
                if existing["status"] != "ATIVA":
                    raise tag.refused("A cobrança não está ATIVA e a requisição busca alterá-la.")
                _revise(existing, fields)
            return 201, _public(existing)
        self.locations_issued += 1
        location = f"{LOCATION_HOST}{'cobv/' if kind == COBV else ''}{uuid.uuid4().hex}"
        cob = {
            "calendario": {"criacao": _timestamp(now)},
            "txid": txid,
            "revisao": 0,
            "loc": {
                "id": self.locations_issued,
                "txid": txid,
                "location": location,
                "tipoCob": kind,
                "criacao": _timestamp(now),
            },
            "location": location,
            "status": "ATIVA",
            "chave": RECEIVER_KEY,
        }
        if kind == COBV:
            cob["recebedor"] = RECEBEDOR
        _set_fields(cob, fields)
        self.cobs[txid] = cob
        return 201, _public(cob)

    def _patch_cob(self, body: dict, request: Request, kind: str, txid: str):
        tag, cob = TAGS[kind], self._cob(kind, txid)
        if cob["status"] != "ATIVA":
            raise tag.refused("A cobrança não está ATIVA.")
        if "status" in body:
            if body["status"] != REMOVED_BY_RECEIVER or len(body) > 1:
                raise tag.refused("Só se remove a cobrança, sem outras alterações.")
            cob["status"] = REMOVED_BY_RECEIVER
            cob["revisao"] += 1
        else:
            revised = _merged(_request_body(cob), body)
            _revise(cob, _charge_fields(kind, revised, sao_paulo_day(_created(cob))))
        return 200, _public(cob)

    def _get_cob(self, body: dict, request: Request, kind: str, txid: str):
        return 200, _public(self._cob(kind, txid))

    def _list_pix(self, body: dict, request: Request):
        start, end, page, size = _listing(request.args)
        matching = [
            item
            for item in self.pix.values()
            if start <= datetime.fromisoformat(item["horario"]) <= end
        ]
        return 200, _page(request.args, "pix", matching, page, size)

    def _list_cobs(self, body: dict, request: Request, kind: str):
        """`GET /cob` or `GET /cobv`: by creation time (`calendario.criacao`), optionally by
        `status`."""
        start, end, page, size = _listing(request.args)
        status = request.args.get("status")
        matching = [
            _public(cob)
            for cob in self.cobs.values()
            if cob["loc"]["tipoCob"] == kind
            and start <= _created(cob) <= end
            and status in (None, cob["status"])
        ]
        return 200, _page(request.args, "cobs", matching, page, size)

    def _get_pix(self, body: dict, request: Request, e2eid: str):
        return 200, self._pix(e2eid)

    def _put_devolucao(self, body: dict, request: Request, e2eid: str, refund_id: str):
        if not DEVOLUCAO_ID_PATTERN.fullmatch(refund_id):
            raise Problem(400, "PixDevolucaoInvalida", "Devolução inválida", "id fora do padrão.")
        received = self._pix(e2eid)
        try:
            amount = amount_from_valor(body.get("valor"))
        except ValueError as error:
            raise Problem(
                400, "PixDevolucaoInvalida", "Devolução inválida", "valor fora do padrão."
            ) from error
        existing = next((d for d in received["devolucoes"] if d["id"] == refund_id), None)
        if existing is not None:
            if existing["valor"] != body["valor"]:
                raise Problem(
                    400,
                    "PixDevolucaoInvalida",
                    "Devolução inválida",
                    "O id já foi usado por outra devolução deste Pix.",
                )
            return 201, existing
        refunded = sum(
            amount_from_valor(d["valor"])
            for d in received["devolucoes"]
            if d["status"] != "NAO_REALIZADO"
        )
        if amount == 0 or refunded + amount > amount_from_valor(received["valor"]):
            raise Problem(
                400,
                "PixDevolucaoInvalida",
                "Devolução inválida",
                "As devoluções excederiam o valor do Pix originário.",
            )
        now = datetime.now(UTC)
        devolucao = {
            "id": refund_id,
            "rtrId": new_return_id(PSP_ISPB, now),
            "valor": body["valor"],
            "natureza": body.get("natureza", "ORIGINAL"),
            "horario": {"solicitacao": _timestamp(now)},
            "status": "EM_PROCESSAMENTO",
        }
        if body.get("descricao"):
            devolucao["descricao"] = body["descricao"]
        received["devolucoes"].append(devolucao)
        return 201, devolucao

    def _get_devolucao(self, body: dict, request: Request, e2eid: str, refund_id: str):
        return 200, self._devolucao(e2eid, refund_id)

    def _put_webhook(self, body: dict, request: Request, chave: str):
        url = body.get("webhookUrl")
        if chave != RECEIVER_KEY:
            raise Problem(
                400, "WebhookOperacaoInvalida", "Webhook inválido", "A chave não é do recebedor."
            )
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise Problem(
                400, "WebhookOperacaoInvalida", "Webhook inválido", "webhookUrl inválida."
            )
        self.webhooks[chave] = {
            "webhookUrl": url,
            "chave": chave,
            "criacao": _timestamp(datetime.now(UTC)),
        }
        return 200, {}

    def _get_webhook(self, body: dict, request: Request, chave: str):
        """`WebhookCompleto`: the receiver's CNPJ and when it was set, besides the URL."""
        if chave not in self.webhooks:
            raise Problem(404, "WebhookNaoEncontrado", "Webhook não encontrado", f"chave {chave}.")
        webhook = self.webhooks[chave]
        return 200, {"cnpj": RECEIVER_CNPJ, "criacao": _timestamp(datetime.now(UTC)), **webhook}

    def _cob(self, kind: str, txid: str) -> dict:
        cob = self.cobs.get(txid)
        if cob is None or cob["loc"]["tipoCob"] != kind:
            raise Problem(404, TAGS[kind].not_found, "Cobrança não encontrada", f"txid {txid}.")
        return cob

    def _pix(self, e2eid: str) -> dict:
        if e2eid not in self.pix:
            raise Problem(404, "PixNaoEncontrado", "Pix não encontrado", f"e2eid {e2eid}.")
        return self.pix[e2eid]

    def _devolucao(self, e2eid: str, refund_id: str) -> dict:
        for devolucao in self._pix(e2eid)["devolucoes"]:
            if devolucao["id"] == refund_id:
                return devolucao
        raise Problem(
            404, "PixDevolucaoNaoEncontrada", "Devolução não encontrada", f"id {refund_id}."
        )


def start_fake_api_pix(tls: bool | TlsFiles = False, **options) -> FakeApiPix:
    """Serve a new fake PSP on a free localhost port, on a daemon thread; `stop()` ends it.
    `tls`: HTTPS requiring a client certificate, with new `TlsFiles` (True) or these."""
    standard.operations()  # load the document now, not within a request's timeout
    if tls is True:
        tls = TlsFiles.make(Path(tempfile.mkdtemp(prefix="fake-api-pix-tls-")))
    fake = FakeApiPix(tls=tls or None, **options)
    context = fake.tls.server_context() if fake.tls else None
    fake.server = make_server("127.0.0.1", 0, fake.wsgi, threaded=True, ssl_context=context)
    threading.Thread(
        target=fake.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return fake


def _listing(args) -> tuple[datetime, datetime, int, int]:
    """The `inicio`, `fim` and paging of a list call, checked as the standard asks."""
    start, end = args.get("inicio", ""), args.get("fim", "")
    if not _RFC3339.fullmatch(start) or not _RFC3339.fullmatch(end):
        raise Problem(
            400, "PixConsultaInvalida", "Consulta inválida", "inicio e fim são obrigatórios."
        )
    start, end = datetime.fromisoformat(start), datetime.fromisoformat(end)
    if end < start:
        raise Problem(400, "PixConsultaInvalida", "Consulta inválida", "fim antes de inicio.")
    try:
        page = int(args.get("paginacao.paginaAtual", 0))
        size = int(args.get("paginacao.itensPorPagina", 100))
    except ValueError as error:
        raise Problem(
            400, "PixConsultaInvalida", "Consulta inválida", "paginação inválida."
        ) from error
    if page < 0 or size < 1:
        raise Problem(400, "PixConsultaInvalida", "Consulta inválida", "paginação inválida.")
    return start, end, page, size


def _page(args, key: str, matching: list, page: int, size: int) -> dict:
    """One page of a list answer, with the standard's `parametros.paginacao`."""
    return {
        "parametros": {
            "inicio": args["inicio"],
            "fim": args["fim"],
            "paginacao": {
                "paginaAtual": page,
                "itensPorPagina": size,
                "quantidadeDePaginas": max(1, -(-len(matching) // size)),
                "quantidadeTotalDeItens": len(matching),
            },
        },
        key: matching[page * size : (page + 1) * size],
    }


def _request_problem(endpoint: str, values: dict) -> tuple[str, str]:
    """The API Pix error (name, title) an invalid request to `endpoint` gets."""
    tag = TAGS.get(values.get("kind"))
    if tag is None:
        return REQUEST_PROBLEMS.get(endpoint, ("RequisicaoInvalida", "Requisição inválida"))
    if endpoint in ("get_cob", "list_cobs"):
        return tag.bad_query, "Consulta inválida"
    return tag.invalid, "Cobrança inválida"


def _charge_fields(kind: str, body: dict, created_on: date) -> dict:
    """What a PUT or PATCH of a cob or cobv created on `created_on` (São Paulo) asks for:
    its `calendario`, `valor` and `devedor`. A body breaking the rules the standard lists
    for `Cob[V]OperacaoInvalida` is refused with each broken one in `violacoes`."""
    broken = list(_violations(kind, body, created_on))
    if broken:
        raise TAGS[kind].refused(
            " ".join(reason for _, reason in broken),
            [{"propriedade": f"{kind}.{name}", "razao": reason} for name, reason in broken],
        )
    calendario = body.get("calendario") or {}
    if kind == COBV:
        calendario = {
            "dataDeVencimento": calendario["dataDeVencimento"],
            "validadeAposVencimento": calendario.get(
                "validadeAposVencimento", DEFAULT_VALIDADE_APOS_VENCIMENTO
            ),
        }
        valor_asked = body["valor"]
    else:
        calendario = {"expiracao": calendario.get("expiracao", DEFAULT_EXPIRACAO)}
        valor_asked = {"original": body["valor"]["original"]}
    return {"calendario": calendario, "valor": valor_asked, "devedor": body.get("devedor")}


def _violations(kind: str, body: dict, created_on: date) -> Iterator[tuple[str, str]]:
    """(field, reason) for each rule broken: the schema's (a PATCH merged into what the
    charge holds is not checked by it) and the semantic ones."""
    original = _valor_or_none((body.get("valor") or {}).get("original"))
    if original is None:
        yield "valor.original", "O campo valor.original não respeita o schema."
    elif original == 0:
        yield "valor.original", "O campo valor.original apresenta o valor zero."
    if body.get("chave") != RECEIVER_KEY:
        yield "chave", "A chave não pertence ao recebedor."
    devedor = body.get("devedor")
    if (devedor is None and kind == COBV) or (
        devedor is not None
        and not (
            isinstance(devedor, dict)
            and isinstance(devedor.get("nome"), str)
            and (("cpf" in devedor) != ("cnpj" in devedor))
        )
    ):
        yield "devedor", "O objeto devedor não respeita o schema."
    calendario = body.get("calendario") or {}
    if kind == COB:
        expiracao = calendario.get("expiracao", DEFAULT_EXPIRACAO)
        if not isinstance(expiracao, int) or isinstance(expiracao, bool) or expiracao <= 0:
            yield "calendario.expiracao", "expiracao inválida."
        return
    due_on = _date_or_none(calendario.get("dataDeVencimento"))
    if due_on is None:
        yield "calendario.dataDeVencimento", "O campo dataDeVencimento não respeita o schema."
    elif due_on < created_on:
        yield (
            "calendario.dataDeVencimento",
            "O campo dataDeVencimento é anterior à data de criação da cobrança.",
        )
    if calendario.get("validadeAposVencimento", DEFAULT_VALIDADE_APOS_VENCIMENTO) < 0:
        yield (
            "calendario.validadeAposVencimento",
            "O campo validadeAposVencimento é menor do que zero.",
        )
    valor_asked = body.get("valor") or {}
    abatimento = valor_asked.get("abatimento")
    if abatimento and _whole(abatimento["valorPerc"], abatimento["modalidade"] == 2, original):
        yield (
            "valor.abatimento",
            "O objeto valor.abatimento representa um valor maior ou igual ao valor da "
            "cobrança original ou maior ou igual a 100%.",
        )
    if valor_asked.get("desconto"):
        yield from _desconto_violations(valor_asked["desconto"], due_on, original)


def _desconto_violations(
    desconto: dict, due_on: date | None, original: int | None
) -> Iterator[tuple[str, str]]:
    modalidade = desconto["modalidade"]
    dated, value = desconto.get("descontoDataFixa"), desconto.get("valorPerc")
    percent = modalidade in PERCENT_DESCONTOS
    if modalidade in (1, 2):
        if value is not None:
            yield (
                "valor.desconto.valorPerc",
                "O objeto valor.desconto apresenta modalidade 1 ou 2, porém valorPerc "
                "encontra-se preenchido.",
            )
        if not dated:
            yield (
                "valor.desconto.descontoDataFixa",
                "O objeto valor.desconto apresenta modalidade 1 ou 2, porém "
                "descontoDataFixa está vazio ou nulo.",
            )
        tiers = dated or []
    else:
        if value is None:
            yield (
                "valor.desconto.valorPerc",
                "O objeto valor.desconto apresenta modalidade de 3 a 6, porém valorPerc não "
                "está preenchido.",
            )
        if dated is not None:
            yield (
                "valor.desconto.descontoDataFixa",
                "O objeto valor.desconto apresenta modalidade de 3 a 6, porém "
                "descontoDataFixa está preenchido.",
            )
        tiers = [] if value is None else [{"valorPerc": value}]
    if due_on is not None and any(
        date.fromisoformat(tier["data"]) > due_on for tier in tiers if "data" in tier
    ):
        yield (
            "valor.desconto.descontoDataFixa",
            "O objeto valor.desconto apresenta algum elemento cuja data é posterior à data "
            "de vencimento.",
        )
    if any(_whole(tier["valorPerc"], percent, original) for tier in tiers):
        yield (
            "valor.desconto",
            "O objeto valor.desconto apresenta algum elemento de desconto que representa um "
            "valor maior ou igual ao valor da cobrança original ou maior ou igual a 100%.",
        )


def _whole(valor_perc: str, percent: bool, original: int | None) -> bool:
    """Whether a rebate or discount takes everything: 100 % or more, or the original amount."""
    taken = amount_from_valor(valor_perc)
    return taken >= FULL_PERCENT if percent else original is not None and taken >= original


def _valor_or_none(text: object) -> int | None:
    try:
        return amount_from_valor(text)
    except ValueError:
        return None


def _date_or_none(text: object) -> date | None:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        return None


def _created(cob: dict) -> datetime:
    return datetime.fromisoformat(cob["calendario"]["criacao"])


def _merged(held: dict, patch: dict) -> dict:
    """`patch` over `held`, object by object (a list or value replaces what it names)."""
    merged = dict(held)
    for name, value in patch.items():
        both = isinstance(value, dict) and isinstance(held.get(name), dict)
        merged[name] = _merged(held[name], value) if both else value
    return merged


def _request_body(cob: dict) -> dict:
    """A stored cob as the PUT body that made it, so a PATCH revises only what it names."""
    fields = cob["request"]
    body = {"calendario": fields["calendario"], "valor": fields["valor"], "chave": cob["chave"]}
    if fields["devedor"]:
        body["devedor"] = fields["devedor"]
    return body


def _set_fields(cob: dict, fields: dict) -> None:
    """What a PUT or PATCH asked for, into the cob. Its BR Code follows the amount; a cobv's
    has none, as the standard's example: what is due depends on the day it is paid."""
    cob["request"] = fields
    cob["calendario"].update(fields["calendario"])
    cob["valor"] = fields["valor"]
    cob["pixCopiaECola"] = brcode.dynamic_payload(
        location=cob["location"],
        merchant_name="Acme Loja",
        merchant_city="SAO PAULO",
        amount_cents=None
        if cob["loc"]["tipoCob"] == COBV
        else amount_from_valor(fields["valor"]["original"]),
    )
    if fields["devedor"]:
        cob["devedor"] = fields["devedor"]
    else:
        cob.pop("devedor", None)


def _revise(cob: dict, fields: dict) -> None:
    _set_fields(cob, fields)
    cob["revisao"] += 1


def _public(cob: dict) -> dict:
    return {name: value for name, value in cob.items() if name != "request"}


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _oauth_error(status: int, error: str) -> Response:
    return Response(json.dumps({"error": error}), status, content_type="application/json")
