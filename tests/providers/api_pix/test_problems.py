"""What a PSP's RFC 7807 problem tells us: `violacoes` (field and reason) and `correlationId`
kept on the error, in its message and in the WARNING log; the `detail` only where it
describes the merchant's request; every text cleaned and capped against a hostile PSP; and
through the API, a refused live charge whose failure names field, reason and correlation id."""

import json
import logging

import pytest
import requests

from app.providers.api_pix import ApiPixRefused, ApiPixUnavailable, problems
from app.providers.api_pix.mapping import cob_body, txid_for
from tests.support.charges import CPF, create, created
from tests.support.fake_api_pix import RECEIVER_KEY

TXID = txid_for("0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d")
VIOLACOES = [
    {"propriedade": "cob.valor.original", "razao": "O valor deve ser maior que zero."},
    {"propriedade": "cob.chave", "razao": "A chave não pertence ao recebedor."},
]


def body() -> dict:
    return cob_body(1234, 3600, None, None, receiver_key=RECEIVER_KEY)


def answer_once(monkeypatch, client, status: int, problem, headers: dict | None = None):
    """The client's next API call gets this answer instead of reaching the fake PSP (whose
    own answers keep to the standard); the token still comes from the fake."""
    send = client.session.request

    def crafted(method, url, **kwargs):
        if url == client.settings.token_url:
            return send(method, url, **kwargs)
        monkeypatch.setattr(client.session, "request", send)
        answer = requests.Response()
        answer.status_code = status
        answer.headers.update({"Content-Type": "application/problem+json", **(headers or {})})
        answer._content = json.dumps(problem).encode()
        return answer

    monkeypatch.setattr(client.session, "request", crafted)


def problem_logs(caplog) -> list[logging.LogRecord]:
    return [
        record for record in caplog.records if record.getMessage().startswith("API Pix problem")
    ]


# Violations and correlation id


def test_a_refusal_keeps_the_violations_and_the_correlation_id(psp, client, caplog):
    psp.fail_next(400, violacoes=VIOLACOES, correlation_id="c0rr-42")

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    error = refused.value
    assert error.violations == (
        ("cob.valor.original", "O valor deve ser maior que zero."),
        ("cob.chave", "A chave não pertence ao recebedor."),
    )
    assert error.correlation_id == "c0rr-42"
    assert error.message == (
        f"PUT /cob/{TXID}: Requisição inválida: Falha simulada. "
        "(cob.valor.original: O valor deve ser maior que zero.; "
        "cob.chave: A chave não pertence ao recebedor.) [correlationId c0rr-42]"
    )
    (logged,) = problem_logs(caplog)
    assert logged.levelno == logging.WARNING
    assert (logged.status, logged.code) == (400, "RequisicaoInvalida")
    assert logged.violations == error.violations
    assert logged.correlation_id == "c0rr-42"


def test_the_correlation_id_falls_back_to_a_response_header(monkeypatch, client):
    problem = {"type": "https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida", "title": "T"}
    answer_once(monkeypatch, client, 400, problem, {"X-Request-Id": "req-7"})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    assert refused.value.correlation_id == "req-7"
    assert refused.value.message.endswith("[correlationId req-7]")


def test_the_body_s_correlation_id_wins_over_the_header(monkeypatch, client):
    problem = {"title": "T", "correlationId": "from-body"}
    answer_once(monkeypatch, client, 400, problem, {"X-Correlation-Id": "from-header"})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    assert refused.value.correlation_id == "from-body"


@pytest.mark.parametrize("status", [500, 503])
def test_an_outage_s_message_has_the_correlation_id_but_not_the_detail(psp, client, status):
    psp.fail_next(status, correlation_id="out-1", violacoes=VIOLACOES[:1])

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    error = unavailable.value
    assert error.correlation_id == "out-1"
    assert error.violations == (("cob.valor.original", "O valor deve ser maior que zero."),)
    assert "Falha simulada" not in error.message
    assert error.message.endswith("[correlationId out-1]")


def test_refused_credentials_name_no_detail(monkeypatch, client):
    problem = {"title": "Acesso negado", "detail": "client acme-client lacks cob.write"}
    answer_once(monkeypatch, client, 403, problem)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert "acme-client" not in unavailable.value.message
    assert "Acesso negado" in unavailable.value.message


# A hostile or careless PSP


@pytest.mark.parametrize(
    ("violacoes", "kept"),
    [
        ("not a list", ()),
        ({"razao": "a dict, not a list"}, ()),
        ([None, 5, "x", ["razao"]], ()),
        ([{"razao": 5, "propriedade": "p"}, {"propriedade": "only a field"}], ()),
        ([{"razao": "   "}, {"razao": "no field"}], (("", "no field"),)),
        ([{"razao": "r", "propriedade": ["p"]}], (("", "r"),)),
    ],
    ids=["string", "object", "not-objects", "no-textual-reason", "blank", "junk-field"],
)
def test_junk_violations_are_dropped(monkeypatch, client, violacoes, kept):
    answer_once(monkeypatch, client, 400, {"title": "T", "violacoes": violacoes})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    assert refused.value.violations == kept


@pytest.mark.parametrize(
    "problem",
    [[1, 2], "text", {"title": 5, "detail": None, "type": 7, "correlationId": {"a": 1}}],
    ids=["list", "string", "junk-fields"],
)
def test_a_junk_problem_still_says_what_happened(monkeypatch, client, problem):
    answer_once(monkeypatch, client, 422, problem)

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    assert refused.value.code == "422"
    assert refused.value.message == f"PUT /cob/{TXID}: HTTP 422"
    assert refused.value.correlation_id is None


def test_the_echoed_value_of_a_violation_is_never_kept(monkeypatch, client, caplog):
    violacao = {"propriedade": "cob.devedor.cpf", "razao": "CPF inválido", "valor": CPF}
    answer_once(monkeypatch, client, 400, {"title": "T", "violacoes": [violacao]})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    assert refused.value.violations == (("cob.devedor.cpf", "CPF inválido"),)
    assert CPF not in refused.value.message
    assert CPF not in str(problem_logs(caplog)[0].__dict__)


def test_control_characters_cannot_forge_log_lines(monkeypatch, client):
    problem = {
        "title": "Cobrança\r\ninválida",
        "detail": "fim\n2026-01-01 ERROR forged\x1b[31m",
        "correlationId": "id\u2028x",
        "violacoes": [{"propriedade": "a\tb", "razao": "r\x00r"}],
    }
    answer_once(monkeypatch, client, 400, problem)

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    error = refused.value
    assert error.message.isprintable()
    assert "Cobrança inválida: fim 2026-01-01 ERROR forged [31m" in error.message
    assert error.correlation_id == "id x"
    assert error.violations == (("a b", "r r"),)


def test_everything_a_psp_sends_is_capped(monkeypatch, client):
    problem = {
        "type": "https://psp.example/" + "T" * 5000,
        "title": "t" * 5000,
        "detail": "d" * 1_000_000,
        "correlationId": "c" * 5000,
        "violacoes": [{"propriedade": "p" * 5000, "razao": "r" * 5000}] * 1000,
    }
    answer_once(monkeypatch, client, 400, problem)

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body())

    error = refused.value
    assert len(error.message) <= problems.MAX_MESSAGE_LENGTH
    assert error.message.endswith(f"[correlationId {error.correlation_id}]")
    assert len(error.correlation_id) <= problems.MAX_NAME_LENGTH
    assert len(error.code) <= problems.MAX_NAME_LENGTH
    assert len(error.violations) == problems.MAX_VIOLATIONS
    for field, reason in error.violations:
        assert len(field) <= problems.MAX_NAME_LENGTH
        assert len(reason) <= problems.MAX_PROBLEM_TEXT


def test_a_problem_echoing_our_webhook_url_has_its_secret_masked(monkeypatch, client, caplog):
    url = "https://acme.example/v1/api-pix/webhook/" + "s3cr3t" * 6
    problem = {
        "title": "Webhook inválido",
        "detail": f"webhookUrl {url} inacessível",
        "violacoes": [{"propriedade": "webhookUrl", "razao": f"{url} não responde"}],
    }
    answer_once(monkeypatch, client, 400, problem)

    with pytest.raises(ApiPixRefused) as refused:
        client.put_webhook(RECEIVER_KEY, url)

    assert "s3cr3t" not in refused.value.message
    assert "webhookUrl *** inacessível" in refused.value.message
    assert "s3cr3t" not in caplog.text
    assert "s3cr3t" not in str([record.__dict__ for record in caplog.records])


# Through the API


def test_a_refused_live_charge_names_field_reason_and_correlation_id(api, merchant, live):
    live.fail_next(400, violacoes=VIOLACOES, correlation_id="c0rr-42")

    charge = created(
        api, merchant.api_key, customer={"name": "Ana Souza", "document": CPF}, amount=5_000
    )

    assert charge["status"] == "failed"
    failure = charge["metadata"]["failure"]
    assert failure["providerErrorCode"] == "RequisicaoInvalida"
    assert "cob.valor.original: O valor deve ser maior que zero." in failure["reason"]
    assert "cob.chave: A chave não pertence ao recebedor." in failure["reason"]
    assert "[correlationId c0rr-42]" in failure["reason"]


def test_a_live_charge_during_throttling_is_503_naming_the_correlation_id(api, merchant, live):
    live.fail_next(429, retry_after="120", correlation_id="busy-9")
    live.fail_next(429, retry_after="120", correlation_id="busy-9")  # the provider's one retry

    answer = create(api, merchant.api_key, amount=5_000)

    assert answer.status_code == 503, answer.get_json()
    assert "[correlationId busy-9]" in answer.get_json()["error"]["message"]
