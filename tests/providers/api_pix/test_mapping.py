"""Our records in API Pix words and back: txids, valor strings, cob bodies, statuses and
webhook bodies, strictly parsed."""

import logging
import re
import uuid
from datetime import UTC, datetime

import pytest

from app.models import RefundStatus
from app.pix.identifiers import TXID_PATTERN
from app.providers.api_pix.mapping import (
    DEVOLUCAO_ID_PATTERN,
    MED_NATUREZAS,
    REFUND_STATUS,
    amount_from_valor,
    cob_body,
    devolucao_id_for,
    parse_webhook,
    payer_document_path,
    solicitacao_pagador,
    txid_for,
    valor,
)

KEY = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
E2E = "E12345678202009091221abcdef12345"
E2E_2 = "E87654321202009091222ghijk789012"
TXID = "cd1fe328c875481285a6f233ae41b662"


def pix(**fields) -> dict:
    return {
        "endToEndId": E2E,
        "txid": TXID,
        "valor": "100.00",
        "horario": "2020-09-10T13:03:33.902Z",
        "infoPagador": "Reforma da casa",
        **fields,
    }


def devolucao(**fields) -> dict:
    return {
        "id": "000AAA111",
        "rtrId": "D12345678202009091000abcde123456",
        "valor": "11.00",
        "horario": {"solicitacao": "2020-09-10T13:03:33.902Z"},
        "status": "EM_PROCESSAMENTO",
        **fields,
    }


# txid


def test_txid_is_the_transaction_uuid_without_dashes():
    transaction_id = "0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d"

    assert txid_for(transaction_id) == "0b0e5f4e8f0a4c559a8e3f1d2a6b7c8d"
    assert txid_for(transaction_id) == txid_for(transaction_id.upper())


def test_txids_always_fit_the_standard_charset_and_length():
    for _ in range(200):
        txid = txid_for(str(uuid.uuid4()))
        assert TXID_PATTERN.fullmatch(txid)
        assert len(txid) == 32


def test_devolucao_ids_fit_their_pattern_and_repeat():
    refund_id = str(uuid.uuid4())

    assert DEVOLUCAO_ID_PATTERN.fullmatch(devolucao_id_for(refund_id))
    assert devolucao_id_for(refund_id) == devolucao_id_for(refund_id)


@pytest.mark.parametrize("bad", ["", "ch_123", "not-a-uuid", "0b0e5f4e-8f0a-4c55-9a8e"])
def test_txid_needs_a_transaction_uuid(bad):
    with pytest.raises(ValueError, match="transaction id"):
        txid_for(bad)


# valor


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("0.01", 1),
        ("0.00", 0),
        ("12.34", 1234),
        ("100.00", 10000),
        ("0012.30", 1230),
        ("9999999999.99", 999_999_999_999),
    ],
)
def test_valor_strings_become_minor_units(text, amount):
    assert amount_from_valor(text) == amount


@pytest.mark.parametrize(
    "bad",
    [
        "12.3",
        "12",
        "12.",
        ".50",
        "12.345",
        "1,23",
        "1.234,56",
        " 12.34",
        "12.34 ",
        "12.34\n",
        "-1.00",
        "+1.00",
        "1e3",
        "12345678901.00",
        "١٢.٣٤",  # Arabic-Indic digits: `\d` would take them
        "",
        None,
        12.34,
        1234,
    ],
)
def test_anything_else_is_not_a_valor(bad):
    with pytest.raises(ValueError, match="valor"):
        amount_from_valor(bad)


@pytest.mark.parametrize("amount", [1, 99, 100, 1234, 100_000, 999_999_999_999])
def test_valor_round_trips(amount):
    assert amount_from_valor(valor(amount)) == amount


@pytest.mark.parametrize("amount", [0, -1, 1_000_000_000_000])
def test_valor_refuses_what_the_api_cannot_carry(amount):
    with pytest.raises(ValueError):
        valor(amount)


# cob body


def test_cob_body_without_a_payer():
    assert cob_body(1234, 3600, None, None, receiver_key=KEY) == {
        "calendario": {"expiracao": 3600},
        "valor": {"original": "12.34"},
        "chave": KEY,
    }


@pytest.mark.parametrize(
    ("document", "devedor"),
    [
        ("52998224725", {"cpf": "52998224725"}),
        ("529.982.247-25", {"cpf": "52998224725"}),
        ("11.222.333/0001-81", {"cnpj": "11222333000181"}),
        ("12.ABC.345/01DE-35", {"cnpj": "12ABC34501DE35"}),
    ],
)
def test_cob_body_names_the_payer_by_cpf_or_cnpj(document, devedor):
    body = cob_body(500, 60, "Fulano de Tal", document, receiver_key=KEY)

    assert body["devedor"] == {**devedor, "nome": "Fulano de Tal"}


@pytest.mark.parametrize(("name", "document"), [("Fulano", None), (None, "52998224725")])
def test_cob_body_leaves_out_a_half_known_payer(name, document):
    assert "devedor" not in cob_body(500, 60, name, document, receiver_key=KEY)


def test_cob_body_refuses_a_bad_document_or_expiry():
    with pytest.raises(ValueError, match="CPF"):
        cob_body(500, 60, "Fulano", "52998224700", receiver_key=KEY)
    with pytest.raises(ValueError, match="expiracao"):
        cob_body(500, 0, None, None, receiver_key=KEY)


# statuses


def test_refund_statuses_and_med():
    assert REFUND_STATUS == {
        "EM_PROCESSAMENTO": RefundStatus.IN_PROGRESS,
        "DEVOLVIDO": RefundStatus.REFUNDED,
        "NAO_REALIZADO": RefundStatus.FAILED,
    }
    assert frozenset({"MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO"}) == MED_NATUREZAS


# webhooks


def test_a_webhook_with_several_pix():
    received = parse_webhook(
        {
            "pix": [
                pix(devolucoes=[devolucao()]),
                pix(endToEndId=E2E_2, txid=None, valor="0.01", horario="2020-09-10T10:03:00-03:00"),
            ]
        }
    )

    first, second = received
    assert first.end_to_end_id == E2E
    assert first.txid == TXID
    assert first.amount == 10000
    assert first.received_at == datetime(2020, 9, 10, 13, 3, 33, 902000, tzinfo=UTC)
    assert first.payer_message == "Reforma da casa"
    (refund,) = first.devolucoes
    assert refund.id == "000AAA111"
    assert refund.amount == 1100
    assert refund.status == "EM_PROCESSAMENTO"
    assert refund.settled_at is None
    assert second.txid is None
    assert second.amount == 1
    assert second.received_at == datetime(2020, 9, 10, 13, 3, tzinfo=UTC)
    assert second.devolucoes == ()


def test_devolucoes_as_an_object_or_a_list_read_the_same():
    settled = devolucao(
        status="DEVOLVIDO",
        natureza="MED_FRAUDE",
        horario={"solicitacao": "2020-09-10T13:03:33Z", "liquidacao": "2020-09-10T13:04:00Z"},
    )

    as_object = parse_webhook({"pix": [pix(devolucoes=settled)]})
    as_list = parse_webhook({"pix": [pix(devolucoes=[settled])]})

    assert as_object == as_list
    (refund,) = as_object[0].devolucoes
    assert refund.is_med
    assert refund.settled_at == datetime(2020, 9, 10, 13, 4, tzinfo=UTC)


def test_the_payer_extension_is_read_where_the_setting_says():
    payer = {"cnpj": "11222333000181", "nome": "Empresa SA"}
    (standard,) = parse_webhook({"pix": [pix(pagador=payer)]})
    (received,) = parse_webhook({"pix": [pix(pagador=payer)]}, payer_document_path("pagador"))
    (efi,) = parse_webhook(
        {"pix": [pix(gnExtras={"pagador": payer})]}, payer_document_path("gnExtras.pagador")
    )

    assert standard.payer_document is None and standard.payer_name is None
    assert received.payer_document == efi.payer_document == "11222333000181"
    assert received.payer_name == efi.payer_name == "Empresa SA"
    with pytest.raises(ValueError, match="pagador must be an object"):
        parse_webhook({"pix": [pix(pagador="Fulano")]}, payer_document_path("pagador"))


@pytest.mark.parametrize(
    ("setting", "path"),
    [
        ("", None),
        ("none", None),
        (" NONE ", None),
        ("pagador", ("pagador",)),
        ("gnExtras.pagador", ("gnExtras", "pagador")),
    ],
)
def test_the_payer_document_setting(setting, path):
    assert payer_document_path(setting) == path


@pytest.mark.parametrize("setting", ["pagador.", ".pagador", "pagador cpf", "pagador[0]", "1x"])
def test_a_payer_document_setting_that_names_no_object_is_refused(setting):
    with pytest.raises(ValueError, match="API_PIX_PAYER_DOCUMENT_PATH"):
        payer_document_path(setting)


def test_a_received_txid_may_have_1_to_35_characters():
    for txid in ("a", "0" * 25, "Z" * 35):
        (received,) = parse_webhook({"pix": [pix(txid=txid)]})
        assert received.txid == txid


def test_a_value_of_a_newer_release_never_makes_the_pix_unreadable():
    newer = devolucao(id="D2", status="DEVOLVIDO_PARCIALMENTE", natureza="MED_NOVA")
    (received,) = parse_webhook({"pix": [pix(devolucoes=[devolucao(), newer])]})

    known, unknown = received.devolucoes
    assert known.state is RefundStatus.IN_PROGRESS
    assert unknown.status == "DEVOLVIDO_PARCIALMENTE" and unknown.state is None
    assert unknown.natureza == "MED_NOVA" and not unknown.is_med
    assert [(value.field, value.value) for value in received.unknown_values] == [
        ("devolucao.status", "DEVOLVIDO_PARCIALMENTE"),
        ("devolucao.natureza", "MED_NOVA"),
    ]
    assert received.unknown_values[0].where == "pix[0].devolucoes[1]"


@pytest.mark.parametrize(
    ("devolucoes", "problem"),
    [
        ("x", r"pix\[0\]\.devolucoes must be"),
        ([devolucao(status=None)], "status is required"),
        ([devolucao(id="")], "id is required"),
        ([devolucao(horario="x")], "horario must be an object"),
        ([devolucao(valor="1")], r"devolucoes\[0\]\.valor"),
    ],
)
def test_a_devolucao_too_broken_to_read_is_listed_and_the_pix_still_read(devolucoes, problem):
    (received,) = parse_webhook({"pix": [pix(devolucoes=devolucoes)]})

    assert received.amount == 10000 and received.devolucoes == ()
    (unreadable,) = received.unreadable
    assert re.search(problem, unreadable)


def test_solicitacao_pagador_is_the_description_cut_on_a_word_boundary():
    words = "Pedido 1234 da Loja Exemplo: " + "camiseta azul tamanho M, " * 10
    body = cob_body(500, 60, None, None, receiver_key=KEY, description=words)

    request = body["solicitacaoPagador"]
    assert len(request) <= 140 and words.startswith(request)
    assert words[len(request)] == " " and not request.endswith(" ")
    assert "solicitacaoPagador" not in cob_body(500, 60, None, None, receiver_key=KEY)
    assert solicitacao_pagador("  Pedido\n 42  ") == "Pedido 42"
    assert solicitacao_pagador("x" * 200) == "x" * 140
    assert solicitacao_pagador("  ") is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], '"pix" list'),
        ({}, '"pix" list'),
        ({"pix": pix()}, '"pix" list'),
        ({"pix": []}, "empty"),
        ({"pix": ["E123"]}, r"pix\[0\] must be an object"),
        ({"pix": [pix(endToEndId=None)]}, "endToEndId is required"),
        ({"pix": [pix(endToEndId="E123")]}, "not an end-to-end id"),
        ({"pix": [pix(txid="x" * 36)]}, "not a txid"),
        ({"pix": [pix(txid="pedido-42")]}, "not a txid"),
        ({"pix": [pix(valor="100,00")]}, r"pix\[0\]\.valor"),
        ({"pix": [pix(valor=100)]}, r"pix\[0\]\.valor"),
        ({"pix": [pix(valor="0.00")]}, "more than zero"),
        ({"pix": [pix(horario=None)]}, "horario is required"),
        ({"pix": [pix(horario="2020-09-10 13:03")]}, "no time zone"),
        ({"pix": [pix(horario="yesterday")]}, "not an RFC 3339"),
        ({"pix": [pix(infoPagador=7)]}, "infoPagador must be a string"),
    ],
)
def test_malformed_webhooks_say_what_is_wrong(body, message):
    with pytest.raises(ValueError, match=message):
        parse_webhook(body)


def test_an_unreadable_pix_among_readable_ones_is_skipped_and_logged(caplog):
    """The readable Pix are applied; re-delivering the call would fail for ever otherwise."""
    with caplog.at_level(logging.ERROR, logger="app.providers.api_pix.mapping"):
        entries = parse_webhook({"pix": [pix(), pix(valor="x")]})
    assert [entry.end_to_end_id for entry in entries] == [pix()["endToEndId"]]
    (logged,) = caplog.records
    assert "pix[1].valor" in logged.problem
