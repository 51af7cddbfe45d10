"""The checker the fake PSP runs everything through (`tests/support/api_pix_standard.py`):
its corrections of the published document, and that it catches what it is there to catch."""

import hashlib
import json

import pytest
import requests
import yaml

from tests.support import api_pix_standard as standard
from tests.support.fake_api_pix import RECEIVER_KEY

# Of `openapi.yaml` at bacen/pix-api tag 2.9.0 (bacen_api_pix/README.md).
RELEASE_SHA256 = "4047ae07a639dea4c13cdb60f79e2b849b4825aa6ebebbe96938b9a22d9f1ca8"
TXID = "0b0e5f4e8f0a4c559a8e3f1d2a6b7c8d"
E2EID = "E12345678202009091221abcdef12345"
DEVOLUCAO = {
    "id": "D1",
    "rtrId": "D12345678202009091000abcde123456",
    "valor": "1.00",
    "horario": {"solicitacao": "2020-09-09T10:00:00Z"},
    "status": "DEVOLVIDO",
}


def test_the_vendored_document_is_the_release_unchanged():
    raw = standard.SPEC_PATH.read_bytes()
    published = yaml.safe_load(raw)

    assert hashlib.sha256(raw).hexdigest() == RELEASE_SHA256
    assert published["info"]["version"] == "2.9.0"
    assert json.dumps(published).count('"/^\\\\d{11}$/"') == 12  # the CPF bug, unpatched


@pytest.mark.parametrize(("cpf", "valid"), [("12345678901", True), ("1234567890", False)])
def test_a_cpf_of_eleven_digits_passes_once_the_pattern_is_patched(cpf, valid):
    violations = standard.schema_violations(
        standard.component("PessoaFisica"), {"cpf": cpf, "nome": "Ana Souza"}
    )

    assert (violations == []) is valid


def test_patterns_match_whole_values():
    (violation,) = standard.schema_violations(
        standard.component("CobValor"), {"original": "12.345"}
    )

    assert violation.startswith("original:")


def test_a_daily_discount_is_one_branch_of_the_cobv_discount():
    daily = {"modalidade": 3, "valorPerc": "1.00"}
    both = {**daily, "descontoDataFixa": [{"data": "2026-12-01", "valorPerc": "1.00"}]}

    def violations(desconto):
        return standard.schema_violations(
            standard.component("CobVValor"), {"original": "10.00", "desconto": desconto}
        )

    assert violations(daily) == []
    assert violations(both) != []


def test_a_cobv_s_receiver_has_its_address_inside_it():
    recebedor = {
        "cnpj": "11222333000181",
        "nome": "Acme",
        "logradouro": "Rua",
        "cidade": "São Paulo",
        "uf": "SP",
        "cep": "01001000",
    }

    def violations(receiver):
        return standard.schema_violations(
            standard.component("DadosRecebedor"), {"recebedor": receiver}
        )

    assert violations(recebedor) == []
    assert violations({**recebedor, "cep": None}) != []


def test_a_txid_under_cobv_is_the_api_s_not_the_payer_s_location():
    operation, values = standard.find_operation("GET", f"/cobv/{TXID}v")

    assert (operation.template, values) == ("/cobv/{txid}", {"txid": f"{TXID}v"})


def test_a_loc_as_the_old_fake_sent_it_is_caught():
    cob = {
        "calendario": {"criacao": "2020-09-09T20:15:00Z", "expiracao": 3600},
        "txid": TXID,
        "revisao": 0,
        "loc": {"id": "7768c1a2f1b94f2fb52b0bd4ab8b4e2b", "location": "pix.example.com/qr/v2/1"},
        "status": "ATIVA",
        "valor": {"original": "12.34"},
        "chave": RECEIVER_KEY,
    }

    violations = standard.response_violations("PUT", f"/cob/{TXID}", 201, cob, "application/json")

    assert "loc.id: '7768c1a2f1b94f2fb52b0bd4ab8b4e2b' is not of type 'integer'" in violations
    assert {"loc: 'txid' is a required property", "loc: 'criacao' is a required property"} <= set(
        violations
    )


def test_a_future_enum_value_is_refused_unless_registered_and_only_as_an_enum():
    newer = {**DEVOLUCAO, "status": "NOVO_STATUS"}
    path = f"/pix/{E2EID}/devolucao/D1"

    def violations(body, future=()):
        return standard.response_violations("GET", path, 200, body, "application/json", future)

    assert violations(newer) == [
        "status: 'NOVO_STATUS' is not one of ['EM_PROCESSAMENTO', 'DEVOLVIDO', 'NAO_REALIZADO']"
    ]
    assert violations(newer, {"NOVO_STATUS"}) == []
    assert violations({**DEVOLUCAO, "valor": "NOVO_STATUS"}, {"NOVO_STATUS"}) != []


def test_a_status_the_operation_does_not_declare_is_caught_unless_injected():
    problem = {"type": "https://pix.bcb.gov.br/api/v2/error/X", "title": "X", "status": 409}

    def violations(**options):
        path = f"/cob/{TXID}"
        return standard.response_violations(
            "PUT", path, 409, problem, "application/problem+json", **options
        )

    assert violations() == ["status 409: not an answer of PUT /cob/{txid}"]
    assert violations(tolerated_statuses={409}) == []


def test_a_webhook_pix_without_horario_is_caught():
    body = {"pix": [{"endToEndId": E2EID, "valor": "1.00", "txid": "abc"}]}

    assert standard.webhook_violations(body) == ["pix.0: 'horario' is a required property"]


def test_requests_are_checked_for_parameters_and_body():
    violations = standard.request_violations(
        "GET",
        "/pix",
        {"inicio": ["2020-01-01T00:00:00Z"], "paginacao.paginaAtual": ["-1"], "sort": ["x"]},
        None,
        None,
    )

    assert set(violations) == {
        "query parameter fim: required",
        "query parameter paginacao.paginaAtual: -1 is less than the minimum of 0",
        "query parameter sort: not declared",
    }


# The fake PSP records violations instead of raising in its server thread


def test_the_fake_refuses_and_records_an_invalid_request(psp, client):
    token = client._valid_token()
    bad = {"calendario": {"expiracao": 3600}, "valor": {"original": "1,00"}, "chave": RECEIVER_KEY}

    answer = requests.put(
        f"{psp.url}/cob/{TXID}", json=bad, headers={"Authorization": f"Bearer {token}"}, timeout=5
    )

    assert answer.status_code == 400
    assert answer.json()["type"].endswith("/CobOperacaoInvalida")
    assert [(v.what, v.method) for v in psp.violations] == [("request", "PUT")]
    assert "valor.original" in psp.violations[0].message
    psp.violations.clear()  # seen; the fixture's teardown would fail the test otherwise


def test_the_fake_sends_a_newer_release_s_status_only_when_told(psp, client):
    pix = psp.receive(1000, txid="pedido42")
    client.put_devolucao(pix["endToEndId"], "D1", {"valor": "1.00"})
    psp.set_devolucao_status(pix["endToEndId"], "D1", "DEVOLVIDO_PARCIALMENTE")

    client.get_devolucao(pix["endToEndId"], "D1")
    (violation,) = psp.violations
    assert violation.what == "answer" and "DEVOLVIDO_PARCIALMENTE" in violation.message
    psp.violations.clear()

    psp.allow_future_enum_value("DEVOLVIDO_PARCIALMENTE")
    assert client.get_devolucao(pix["endToEndId"], "D1")["status"] == "DEVOLVIDO_PARCIALMENTE"
    assert psp.violations == []


def test_a_pix_received_outside_any_cob_is_listed(psp, client):
    static = psp.receive(700)
    short_txid = psp.receive(800, txid="loja1", payer={"cpf": "12345678909", "nome": "Ana"})

    assert client.get_pix(static["endToEndId"])["valor"] == "7.00"
    assert client.get_pix(short_txid["endToEndId"])["txid"] == "loja1"
    assert psp.violations == []
