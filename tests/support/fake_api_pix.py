"""A fake PSP speaking the Banco Central's API Pix, on a real HTTP server on localhost.

It holds cobs, received Pix and devoluções in memory and answers in the standard's shapes,
errors included (RFC 7807 `application/problem+json` with `type`, `title`, `status`,
`detail`). Tests drive it with `pay`, `remove_cob`, `settle_devolucao`, `fail_next`,
`revoke_tokens` and read what it was asked in `requests`. Plain HTTP: mutual TLS is the
client's settings, tested apart.
"""

import base64
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from app.pix import brcode
from app.pix.identifiers import TXID_PATTERN, new_end_to_end_id, new_return_id
from app.providers.api_pix.mapping import (
    DEVOLUCAO_ID_PATTERN,
    REMOVED_BY_PSP,
    REMOVED_BY_RECEIVER,
    amount_from_valor,
    valor,
)

CLIENT_ID = "acme-client"
CLIENT_SECRET = "acme-secret-not-for-logs"
RECEIVER_KEY = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
PSP_ISPB = "12345678"
PAYER_ISPB = "87654321"
ERROR_TYPE = "https://pix.bcb.gov.br/api/v2/error/"
LOCATION_HOST = "pix.example.com/qr/v2/"
DEFAULT_EXPIRACAO = 86400
# The API Pix error a simulated failure answers with, by status.
FAILURE_KINDS = {
    401: ("AcessoNegado", "Não autorizado"),
    403: ("AcessoNegado", "Acesso negado"),
    429: ("ServicoIndisponivel", "Muitas requisições"),
    500: ("ErroInternoDoServidor", "Erro interno do servidor"),
    503: ("ServicoIndisponivel", "Serviço indisponível"),
    504: ("IndisponibilidadePorTempoEsgotado", "Tempo esgotado"),
}
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

URLS = Map(
    [
        Rule("/oauth/token", methods=["POST"], endpoint="token"),
        Rule("/cob", methods=["GET"], endpoint="list_cobs"),
        Rule("/cob/<txid>", methods=["PUT"], endpoint="put_cob"),
        Rule("/cob/<txid>", methods=["PATCH"], endpoint="patch_cob"),
        Rule("/cob/<txid>", methods=["GET"], endpoint="get_cob"),
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
    """An RFC 7807 answer; `kind` is the API Pix error name (`CobOperacaoInvalida`)."""

    def __init__(self, status: int, kind: str, title: str, detail: str):
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail = status, kind, title, detail

    def response(self) -> Response:
        body = {
            "type": ERROR_TYPE + self.kind,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        return Response(json.dumps(body), self.status, content_type="application/problem+json")


@dataclass
class RecordedRequest:
    method: str
    path: str
    args: dict
    authorization: str | None
    body: dict | None


@dataclass
class FakeApiPix:
    """The PSP's books and the test controls. `token_lifetime` is the `expires_in` of new
    tokens; `timeout_delay` how long a `fail_next("timeout")` answer waits."""

    token_lifetime: int = 300
    timeout_delay: float = 1.0
    server: object = None
    cobs: dict = field(default_factory=dict)
    pix: dict = field(default_factory=dict)
    webhooks: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    tokens_issued: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    failures: list = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def config(self, **overrides) -> dict:
        """`API_PIX_*` settings pointing at this fake (what `ApiPixSettings.from_config` reads)."""
        return {
            "API_PIX_BASE_URL": self.url,
            "API_PIX_TOKEN_URL": f"{self.url}/oauth/token",
            "API_PIX_CLIENT_ID": CLIENT_ID,
            "API_PIX_CLIENT_SECRET": CLIENT_SECRET,
            "API_PIX_RECEIVER_PIX_KEY": RECEIVER_KEY,
            **overrides,
        }

    # Test controls

    def fail_next(self, failure: int | str) -> None:
        """The next API call (not the token endpoint) answers `failure` (an HTTP status)
        without acting, or, with "timeout", acts and then answers too late."""
        with self.lock:
            self.failures.append(failure)

    def revoke_tokens(self) -> None:
        """Every token issued so far is refused from now on (401)."""
        with self.lock:
            self.tokens.clear()

    def pay(self, txid: str, amount: int | None = None, payer: dict | None = None, at=None):
        """A payer pays cob `txid` (its own amount unless told): a received Pix with a new
        end-to-end id; `payer` ({"cpf"|"cnpj", "nome"}) goes in the `pagador` extension."""
        with self.lock:
            cob = self.cobs[txid]
            at = at or datetime.now(UTC)
            received = {
                "endToEndId": new_end_to_end_id(PAYER_ISPB, at),
                "txid": txid,
                "valor": valor(amount) if amount is not None else cob["valor"]["original"],
                "chave": cob["chave"],
                "horario": _timestamp(at),
                "infoPagador": "Pedido de teste",
            }
            if payer:
                received["pagador"] = payer
            self.pix[received["endToEndId"]] = {**received, "devolucoes": []}
            cob["status"] = "CONCLUIDA"
            cob.setdefault("pix", []).append(received)
            return self.pix[received["endToEndId"]]

    def remove_cob(self, txid: str) -> dict:
        """The PSP removes cob `txid` itself (`REMOVIDA_PELO_PSP`), as it may at any time."""
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

    def webhook_body(self, *e2eids: str) -> dict:
        """What this PSP would POST to `{webhookUrl}/pix` for these Pix."""
        with self.lock:
            return {"pix": [json.loads(json.dumps(self.pix[e2eid])) for e2eid in e2eids]}

    def calls(self, method: str, path_prefix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

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
        return response(environ, start_response)

    def _dispatch(self, request: Request, endpoint: str, values: dict) -> Response:
        body = request.get_json(silent=True) if request.data else None
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
        if isinstance(failure, int):
            kind, title = FAILURE_KINDS.get(failure, FAILURE_KINDS[500])
            raise Problem(failure, kind, title, "Falha simulada.")
        if request.data and not isinstance(body, dict):
            raise Problem(400, "RequisicaoInvalida", "Requisição inválida", "Corpo não é JSON.")
        with self.lock:
            status, answer = getattr(self, "_" + endpoint)(body or {}, request, **values)
            answer = json.dumps(answer)
        if failure == "timeout":
            time.sleep(self.timeout_delay)
        return Response(answer, status, content_type="application/json")

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

    def _put_cob(self, body: dict, request: Request, txid: str):
        if not TXID_PATTERN.fullmatch(txid):
            raise Problem(400, "CobOperacaoInvalida", "Cobrança inválida", "txid fora do padrão.")
        fields = _cob_fields(body)
        existing = self.cobs.get(txid)
        if existing is not None:
            if existing["request"] != fields:
                raise Problem(
                    409,
                    "CobOperacaoInvalida",
                    "Cobrança inválida",
                    "O txid já está em uso por outra cobrança.",
                )
            return 200, _public(existing)
        now = datetime.now(UTC)
        location_id = uuid.uuid4().hex
        location = LOCATION_HOST + location_id
        cob = {
            "calendario": {"criacao": _timestamp(now), "expiracao": fields["expiracao"]},
            "txid": txid,
            "revisao": 0,
            "loc": {"id": location_id, "location": location, "tipoCob": "cob"},
            "location": location,
            "status": "ATIVA",
            "valor": {"original": fields["original"]},
            "chave": RECEIVER_KEY,
            "pixCopiaECola": brcode.dynamic_payload(
                location=location,
                merchant_name="Acme Loja",
                merchant_city="SAO PAULO",
                amount_cents=amount_from_valor(fields["original"]),
            ),
            "request": fields,
        }
        if fields["devedor"]:
            cob["devedor"] = fields["devedor"]
        self.cobs[txid] = cob
        return 201, _public(cob)

    def _patch_cob(self, body: dict, request: Request, txid: str):
        cob = self._cob(txid)
        if cob["status"] != "ATIVA":
            raise Problem(
                400, "CobOperacaoInvalida", "Cobrança inválida", "A cobrança não está ATIVA."
            )
        if "status" in body:
            if body["status"] != REMOVED_BY_RECEIVER or len(body) > 1:
                raise Problem(
                    400,
                    "CobOperacaoInvalida",
                    "Cobrança inválida",
                    "Só se remove a cobrança, sem outras alterações.",
                )
            cob["status"] = REMOVED_BY_RECEIVER
        else:
            fields = _cob_fields({**_request_body(cob), **body})
            cob["request"] = fields
            cob["valor"] = {"original": fields["original"]}
            cob["calendario"]["expiracao"] = fields["expiracao"]
        cob["revisao"] += 1
        return 200, _public(cob)

    def _get_cob(self, body: dict, request: Request, txid: str):
        return 200, _public(self._cob(txid))

    def _list_pix(self, body: dict, request: Request):
        start, end, page, size = _listing(request.args)
        matching = [
            item
            for item in self.pix.values()
            if start <= datetime.fromisoformat(item["horario"]) <= end
        ]
        return 200, _page(request.args, "pix", matching, page, size)

    def _list_cobs(self, body: dict, request: Request):
        """`GET /cob`: by creation time (`calendario.criacao`), optionally by `status`."""
        start, end, page, size = _listing(request.args)
        status = request.args.get("status")
        matching = [
            _public(cob)
            for cob in self.cobs.values()
            if start <= datetime.fromisoformat(cob["calendario"]["criacao"]) <= end
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
        if chave not in self.webhooks:
            raise Problem(404, "WebhookNaoEncontrado", "Webhook não encontrado", f"chave {chave}.")
        return 200, self.webhooks[chave]

    def _cob(self, txid: str) -> dict:
        if txid not in self.cobs:
            raise Problem(404, "CobNaoEncontrado", "Cobrança não encontrada", f"txid {txid}.")
        return self.cobs[txid]

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


def start_fake_api_pix(**options) -> FakeApiPix:
    """Serve a new fake PSP on a free localhost port, on a daemon thread; `stop()` ends it."""
    fake = FakeApiPix(**options)
    fake.server = make_server("127.0.0.1", 0, fake.wsgi, threaded=True)
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


def _cob_fields(body: dict) -> dict:
    """What a PUT/PATCH asks for, checked as the standard's `CobOperacaoInvalida` lists."""
    calendario = body.get("calendario") or {}
    expiracao = calendario.get("expiracao", DEFAULT_EXPIRACAO)
    if not isinstance(expiracao, int) or isinstance(expiracao, bool) or expiracao <= 0:
        raise Problem(400, "CobOperacaoInvalida", "Cobrança inválida", "expiracao inválida.")
    original = (body.get("valor") or {}).get("original")
    try:
        if amount_from_valor(original) == 0:
            raise ValueError(original)
    except ValueError as error:
        raise Problem(
            400, "CobOperacaoInvalida", "Cobrança inválida", "valor.original fora do padrão."
        ) from error
    if body.get("chave") != RECEIVER_KEY:
        raise Problem(
            400, "CobOperacaoInvalida", "Cobrança inválida", "A chave não pertence ao recebedor."
        )
    devedor = body.get("devedor")
    if devedor is not None and not (
        isinstance(devedor, dict)
        and isinstance(devedor.get("nome"), str)
        and (("cpf" in devedor) != ("cnpj" in devedor))
    ):
        raise Problem(400, "CobOperacaoInvalida", "Cobrança inválida", "devedor inválido.")
    return {"expiracao": expiracao, "original": original, "devedor": devedor}


def _request_body(cob: dict) -> dict:
    """A stored cob as the PUT body that made it, so a PATCH revises only what it names."""
    fields = cob["request"]
    body = {
        "calendario": {"expiracao": fields["expiracao"]},
        "valor": {"original": fields["original"]},
        "chave": cob["chave"],
    }
    if fields["devedor"]:
        body["devedor"] = fields["devedor"]
    return body


def _public(cob: dict) -> dict:
    return {name: value for name, value in cob.items() if name != "request"}


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _oauth_error(status: int, error: str) -> Response:
    return Response(json.dumps({"error": error}), status, content_type="application/json")
