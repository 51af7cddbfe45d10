"""The API Pix client against a fake PSP on a real local HTTP server: tokens, idempotent
retries, RFC 7807 refusals, outages, pagination and devoluções."""

import logging
import socket
from datetime import UTC, datetime, timedelta

import pytest
import requests

from app.pix import brcode
from app.providers.api_pix import (
    ApiPixClient,
    ApiPixRefused,
    ApiPixSettings,
    ApiPixUnavailable,
)
from app.providers.api_pix import client as client_module
from app.providers.api_pix.mapping import cob_body, parse_pix, parse_webhook, txid_for
from app.providers.base import ProviderError, ProviderRefused
from tests.support.fake_api_pix import CLIENT_SECRET, RECEIVER_KEY

TXID = txid_for("0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d")
OTHER_TXID = txid_for("6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d")


def body(amount: int = 1234, **options) -> dict:
    return cob_body(amount, 3600, None, None, receiver_key=RECEIVER_KEY, **options)


def paid_pix(psp, client, amount: int = 1000, txid: str = TXID, at=None) -> dict:
    client.put_cob(txid, body(amount))
    return psp.pay(txid, at=at)


# Tokens


def test_a_token_is_issued_once_and_reused(psp, client):
    client.put_cob(TXID, body())
    client.get_cob(TXID)
    client.get_cob(TXID)

    assert psp.tokens_issued == 1
    (token_call,) = psp.calls("POST", "/oauth/token")
    assert token_call.authorization.startswith("Basic ")
    bearer = {call.authorization for call in psp.calls("GET", "/cob/")}
    assert len(bearer) == 1
    assert bearer.pop().startswith("Bearer ")


def test_the_token_is_refreshed_shortly_before_it_expires(psp, client, clock):
    client.put_cob(TXID, body())
    clock.advance(psp.token_lifetime - 31)
    client.get_cob(TXID)
    assert psp.tokens_issued == 1

    clock.advance(2)  # inside the last 30 seconds of the token's life
    client.get_cob(TXID)
    assert psp.tokens_issued == 2


def test_a_401_fetches_a_new_token_and_retries_once(psp, client):
    client.put_cob(TXID, body())
    psp.revoke_tokens()

    cob = client.get_cob(TXID)

    assert cob["txid"] == TXID
    assert psp.tokens_issued == 2
    assert len(psp.calls("GET", f"/cob/{TXID}")) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_credentials_refused_with_a_fresh_token_are_unavailable_and_an_error(
    psp, client, caplog, status
):
    """Our misconfiguration (a revoked client, a missing scope) must not fail charges for
    good: the call is retried later, and operations are told."""
    psp.fail_next(401)
    psp.fail_next(status)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.get_cob(TXID)

    assert not isinstance(unavailable.value, ProviderRefused)
    assert unavailable.value.code == "AcessoNegado"
    assert psp.tokens_issued == 2
    (error,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "API_PIX_" in error.getMessage() and error.status == status


def test_wrong_credentials_are_unavailable_without_showing_the_secret(psp, caplog):
    settings = ApiPixSettings.from_config(psp.config(API_PIX_CLIENT_SECRET="wrong-secret"))

    with pytest.raises(ApiPixUnavailable) as unavailable:
        ApiPixClient(settings).get_cob(TXID)

    assert not isinstance(unavailable.value, ProviderRefused)
    assert unavailable.value.code == "invalid_client"
    assert "wrong-secret" not in str(unavailable.value)
    assert "wrong-secret" not in caplog.text
    assert [record.code for record in caplog.records if record.levelno == logging.ERROR] == [
        "invalid_client"
    ]
    assert psp.calls("GET", "/cob/") == []


def test_secrets_and_tokens_never_reach_the_log_or_errors(psp, client, caplog):
    caplog.set_level(logging.DEBUG)
    client.put_cob(TXID, body())
    psp.fail_next(500)
    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.get_cob(TXID)

    tokens = {call.authorization.removeprefix("Bearer ") for call in psp.calls("GET", "/cob/")}
    assert caplog.text
    for secret in (CLIENT_SECRET, *tokens):
        assert secret not in caplog.text
        assert secret not in str(unavailable.value)
    assert CLIENT_SECRET not in repr(client.settings)


# Charges


def test_put_cob_creates_a_dynamic_charge(psp, client):
    cob = client.put_cob(TXID, body(1234))

    assert cob["status"] == "ATIVA"
    assert cob["revisao"] == 0
    assert cob["valor"] == {"original": "12.34"}
    code = brcode.parse(cob["pixCopiaECola"])
    assert code.is_dynamic
    assert code.location == cob["location"]
    assert code.amount_cents == 1234


def test_put_cob_after_a_timeout_reads_the_same_charge_back(psp, client):
    psp.fail_next("timeout")  # the PSP creates the charge, the answer comes too late

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())
    assert unavailable.value.code == "timeout"
    assert not isinstance(unavailable.value, ProviderRefused)

    cob = client.put_cob(TXID, body())

    assert cob["txid"] == TXID
    assert cob["revisao"] == 0
    assert len(psp.cobs) == 1
    assert cob["location"] == psp.cobs[TXID]["location"]


def test_the_same_txid_with_another_body_revises_an_active_cob(psp, client):
    client.put_cob(TXID, body(1234))

    revised = client.put_cob(TXID, body(9999))

    assert revised["revisao"] == 1
    assert revised["valor"] == {"original": "99.99"}


def test_the_same_txid_with_another_body_is_refused_once_paid(psp, client):
    client.put_cob(TXID, body(1234))
    psp.pay(TXID)

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, body(9999))

    error = refused.value
    assert isinstance(error, ProviderRefused)
    assert error.status == 400
    assert error.code == "CobOperacaoInvalida"
    assert error.problem["type"] == "https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida"
    assert error.problem["status"] == 400
    assert error.problem["title"] in error.message
    assert error.problem["detail"] in error.message
    assert psp.cobs[TXID]["valor"]["original"] == "12.34"


def test_a_bad_valor_is_refused_with_a_400_problem(psp, client):
    bad = {**body(), "valor": {"original": "12.3"}}

    with pytest.raises(ApiPixRefused) as refused:
        client.put_cob(TXID, bad)

    assert refused.value.status == 400
    assert refused.value.code == "CobOperacaoInvalida"
    assert "valor.original" in refused.value.message
    assert psp.cobs == {}


def test_an_unknown_charge_is_a_404_problem(client):
    with pytest.raises(ApiPixRefused) as refused:
        client.get_cob(TXID)

    assert refused.value.status == 404
    assert refused.value.code == "CobNaoEncontrado"


def test_ids_outside_the_standard_charset_never_leave(psp, client):
    for bad in ("short", TXID + "-", "a" * 36, "ç" * 30):
        with pytest.raises(ValueError, match="txid"):
            client.get_cob(bad)
    with pytest.raises(ValueError, match="refund id"):
        client.get_devolucao("E12345678202009091221abcdef12345", "with-dash")
    assert psp.requests == []


def test_patch_cob_revises_then_removes_the_charge(psp, client):
    client.put_cob(TXID, body(1234))

    revised = client.patch_cob(TXID, {"valor": {"original": "20.00"}})
    assert revised["revisao"] == 1
    assert revised["valor"] == {"original": "20.00"}

    removed = client.patch_cob(TXID, {"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"})
    assert removed["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    assert removed["revisao"] == 2

    with pytest.raises(ApiPixRefused) as refused:
        client.patch_cob(TXID, {"valor": {"original": "30.00"}})
    assert refused.value.code == "CobOperacaoInvalida"


def test_a_paid_charge_is_concluded_with_its_pix(psp, client):
    received = paid_pix(psp, client, 1234)

    cob = client.get_cob(TXID)

    assert cob["status"] == "CONCLUIDA"
    assert [pix["endToEndId"] for pix in cob["pix"]] == [received["endToEndId"]]


# Outages


@pytest.mark.parametrize("status", [500, 503, 504, 429])
def test_server_errors_leave_the_outcome_unknown(psp, client, status):
    psp.fail_next(status)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert isinstance(unavailable.value, ProviderError)
    assert not isinstance(unavailable.value, ProviderRefused)
    assert unavailable.value.code in {
        "ErroInternoDoServidor",
        "ServicoIndisponivel",
        "IndisponibilidadePorTempoEsgotado",
    }
    assert psp.cobs == {}  # the simulated failure acted on nothing: a retry creates it
    assert client.put_cob(TXID, body())["txid"] == TXID


def test_an_unreachable_psp_is_unavailable(psp):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = ApiPixSettings.from_config(
        psp.config(API_PIX_BASE_URL=closed, API_PIX_TOKEN_URL=f"{closed}/oauth/token")
    )

    with pytest.raises(ApiPixUnavailable) as unavailable:
        ApiPixClient(settings).get_cob(TXID)

    assert unavailable.value.code == "connection_error"


def test_an_answer_that_is_not_json_is_unavailable(psp, client, monkeypatch):
    client.put_cob(TXID, body())

    def html(*args, **kwargs):
        response = requests.Response()
        response.status_code = 200
        response._content = b"<html>maintenance</html>"
        return response

    monkeypatch.setattr(client.session, "request", html)
    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.get_cob(TXID)
    assert unavailable.value.code == "bad_answer"


# Received Pix


def test_iter_pix_follows_every_page(psp, client, monkeypatch):
    monkeypatch.setattr(client_module, "PAGE_SIZE", 2)
    now = datetime.now(UTC)
    client.put_cob(TXID, body(1000))
    expected = {
        psp.pay(TXID, at=now - timedelta(minutes=minute))["endToEndId"] for minute in range(5)
    }
    client.put_cob(OTHER_TXID, body(500))
    psp.pay(OTHER_TXID, at=now - timedelta(days=2))  # outside the window

    received = list(client.iter_pix(now - timedelta(hours=1), now + timedelta(minutes=1)))

    assert {item["endToEndId"] for item in received} == expected
    assert len(received) == 5
    pages = [call.args["paginacao.paginaAtual"] for call in psp.calls("GET", "/pix")]
    assert pages == ["0", "1", "2"]
    assert [parse_pix(item).amount for item in received] == [1000] * 5


def test_iter_pix_asks_for_the_next_page_only_when_it_is_reached(psp, client, monkeypatch):
    monkeypatch.setattr(client_module, "PAGE_SIZE", 1)
    now = datetime.now(UTC)
    client.put_cob(TXID, body(1000))
    for minute in range(3):
        psp.pay(TXID, at=now - timedelta(minutes=minute))

    received = client.iter_pix(now - timedelta(hours=1), now + timedelta(minutes=1))
    next(received)

    assert len(psp.calls("GET", "/pix")) == 1


def test_a_long_window_is_asked_for_in_capped_spans(psp, client):
    now = datetime.now(UTC)
    client.put_cob(TXID, body(1000))
    expected = {psp.pay(TXID, at=now - timedelta(hours=hours))["endToEndId"] for hours in (1, 50)}

    received = list(client.iter_pix(now - timedelta(hours=60), now))

    assert {item["endToEndId"] for item in received} == expected
    spans = [
        (datetime.fromisoformat(call.args["inicio"]), datetime.fromisoformat(call.args["fim"]))
        for call in psp.calls("GET", "/pix")
    ]
    assert len(spans) == 3
    assert all(end - start <= client_module.MAX_LIST_SPAN for start, end in spans)
    assert spans[0][0] == now - timedelta(hours=60) and spans[-1][1] == now
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


def test_iter_pix_of_an_empty_window_asks_once(psp, client):
    now = datetime.now(UTC)

    assert list(client.iter_pix(now - timedelta(hours=1), now)) == []
    assert len(psp.calls("GET", "/pix")) == 1


def test_iter_pix_needs_aware_datetimes(client):
    with pytest.raises(ValueError, match="aware"):
        list(client.iter_pix(datetime(2026, 1, 1), datetime(2026, 1, 2)))


def test_get_pix_answers_what_the_webhook_carries(psp, client):
    received = paid_pix(psp, client, 1234)

    pix = client.get_pix(received["endToEndId"])

    assert parse_pix(pix) == parse_webhook(psp.webhook_body(received["endToEndId"]))[0]


# Devoluções


def test_put_devolucao_is_idempotent_per_id(psp, client):
    e2eid = paid_pix(psp, client, 1000)["endToEndId"]
    request = {"valor": "4.00", "natureza": "ORIGINAL", "descricao": "Cliente desistiu"}

    first = client.put_devolucao(e2eid, "r1", request)
    again = client.put_devolucao(e2eid, "r1", request)

    assert first["status"] == "EM_PROCESSAMENTO"
    assert first["rtrId"].startswith("D")
    assert again == first
    assert len(psp.pix[e2eid]["devolucoes"]) == 1

    psp.settle_devolucao(e2eid, "r1")
    assert client.get_devolucao(e2eid, "r1")["status"] == "DEVOLVIDO"


def test_refunds_cannot_exceed_the_pix(psp, client):
    e2eid = paid_pix(psp, client, 1000)["endToEndId"]
    client.put_devolucao(e2eid, "r1", {"valor": "6.00"})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_devolucao(e2eid, "r2", {"valor": "4.01"})

    assert refused.value.code == "PixDevolucaoInvalida"
    assert "excederiam" in refused.value.message
    assert client.put_devolucao(e2eid, "r3", {"valor": "4.00"})["valor"] == "4.00"


def test_a_devolucao_id_cannot_be_reused_for_another_amount(psp, client):
    e2eid = paid_pix(psp, client, 1000)["endToEndId"]
    client.put_devolucao(e2eid, "r1", {"valor": "1.00"})

    with pytest.raises(ApiPixRefused) as refused:
        client.put_devolucao(e2eid, "r1", {"valor": "2.00"})

    assert refused.value.code == "PixDevolucaoInvalida"


def test_devolucoes_of_unknown_pix_are_404(client):
    with pytest.raises(ApiPixRefused) as refused:
        client.put_devolucao("E12345678202009091221abcdef12345", "r1", {"valor": "1.00"})

    assert refused.value.code == "PixNaoEncontrado"
    assert refused.value.status == 404


# Settings


def test_settings_read_the_api_pix_keys():
    settings = ApiPixSettings.from_config(
        {
            "API_PIX_BASE_URL": "https://pix.example.com/api/v2/",
            "API_PIX_TOKEN_URL": "https://pix.example.com/oauth/token",
            "API_PIX_CLIENT_ID": "id",
            "API_PIX_CLIENT_SECRET": "secret",
            "API_PIX_RECEIVER_PIX_KEY": RECEIVER_KEY,
            "API_PIX_CERT_PATH": "/certs/client.pem",
            "API_PIX_KEY_PATH": "/certs/client.key",
            "API_PIX_CA_PATH": "/certs/psp-ca.pem",
            "API_PIX_TIMEOUT_SECONDS": "7.5",
        }
    )

    assert settings.base_url == "https://pix.example.com/api/v2"
    assert settings.scopes == "cob.write cob.read pix.write pix.read webhook.write webhook.read"
    assert settings.requests_options() == {
        "timeout": 7.5,
        "verify": "/certs/psp-ca.pem",
        "cert": ("/certs/client.pem", "/certs/client.key"),
    }
    assert "secret" not in repr(settings)


def test_settings_with_one_pem_and_the_system_cas(psp):
    settings = ApiPixSettings.from_config(psp.config(API_PIX_CERT_PATH="/certs/both.pem"))

    assert settings.requests_options() == {
        "timeout": 10.0,
        "verify": True,
        "cert": "/certs/both.pem",
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"API_PIX_CLIENT_SECRET": ""}, "API_PIX_CLIENT_SECRET"),
        ({"API_PIX_BASE_URL": None, "API_PIX_RECEIVER_PIX_KEY": None}, "API_PIX_BASE_URL"),
        ({"API_PIX_TIMEOUT_SECONDS": "soon"}, "not a number"),
        ({"API_PIX_TIMEOUT_SECONDS": "0"}, "positive"),
        ({"API_PIX_KEY_PATH": "/certs/client.key"}, "needs API_PIX_CERT_PATH"),
    ],
)
def test_bad_settings_say_which_key(psp, overrides, message):
    with pytest.raises(ValueError, match=message):
        ApiPixSettings.from_config(psp.config(**overrides))


def test_every_request_carries_the_tls_options(psp):
    sent = []

    class RecordingSession(requests.Session):
        def request(self, method, url, **kwargs):
            sent.append((url, kwargs.pop("cert"), kwargs.pop("verify"), kwargs["timeout"]))
            return super().request(method, url, **kwargs)

    settings = ApiPixSettings.from_config(
        psp.config(
            API_PIX_CERT_PATH="/certs/c.pem",
            API_PIX_KEY_PATH="/certs/c.key",
            API_PIX_CA_PATH="/certs/ca.pem",
        )
    )
    ApiPixClient(settings, session=RecordingSession()).put_cob(TXID, body())

    assert [url.rsplit("/", 2)[-2:] for url, *_ in sent] == [["oauth", "token"], ["cob", TXID]]
    assert {(cert, verify, timeout) for _, cert, verify, timeout in sent} == {
        (("/certs/c.pem", "/certs/c.key"), "/certs/ca.pem", 10.0)
    }
