"""BR Code builder and parser against the Banco Central's published payloads."""

import pytest

from app.pix.brcode import BrCodeError, crc16, dynamic_payload, parse, static_payload

BCB_STATIC = (
    "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR"
    "5913Fulano de Tal6008BRASILIA62070503***63041D3D"
)
BCB_DYNAMIC = (
    "00020101021226700014br.gov.bcb.pix2548pix.example.com/8b3da2f39a4140d1a91abd93113bd441"
    "5204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***630464E4"
)
PIX_UTILS_STATIC_WITH_AMOUNT = (
    "00020126510014br.gov.bcb.pix0115thalesog@me.com0210Pedido 123520400005303986540510.00"
    "5802BR5914THALES OGLIARI6015SAO MIGUEL DO O62070503***63040DC6"
)


def test_crc_check_value():
    assert crc16("123456789") == "29B1"


def test_builds_the_manuals_static_payload():
    assert (
        static_payload(
            pix_key="123e4567-e12b-12d1-a456-426655440000",
            merchant_name="Fulano de Tal",
            merchant_city="BRASILIA",
        )
        == BCB_STATIC
    )


def test_builds_the_manuals_dynamic_payload():
    assert (
        dynamic_payload(
            location="pix.example.com/8b3da2f39a4140d1a91abd93113bd441",
            merchant_name="Fulano de Tal",
            merchant_city="BRASILIA",
        )
        == BCB_DYNAMIC
    )


def test_builds_a_static_payload_with_amount_and_description():
    assert (
        static_payload(
            pix_key="thalesog@me.com",
            description="Pedido 123",
            amount_cents=1000,
            merchant_name="THALES OGLIARI",
            merchant_city="SAO MIGUEL DO O",
        )
        == PIX_UTILS_STATIC_WITH_AMOUNT
    )


def test_parses_the_published_payloads():
    static = parse(BCB_STATIC)
    assert (static.pix_key, static.location, static.single_use) == (
        "123e4567-e12b-12d1-a456-426655440000",
        None,
        False,
    )
    dynamic = parse(BCB_DYNAMIC)
    assert dynamic.is_dynamic and dynamic.single_use and dynamic.txid == "***"
    assert dynamic.location == "pix.example.com/8b3da2f39a4140d1a91abd93113bd441"
    with_amount = parse(PIX_UTILS_STATIC_WITH_AMOUNT)
    assert (with_amount.amount_cents, with_amount.description) == (1000, "Pedido 123")


def test_names_and_cities_are_ascii_and_bounded():
    payload = dynamic_payload(
        location="pix.acmepay.example.com/qr/v2/abc",
        merchant_name="Padaria São João e Confeitaria Ltda",
        merchant_city="São Paulo do Potengi",
        amount_cents=123456,
    )
    parsed = parse(payload)
    assert parsed.merchant_name == "Padaria Sao Joao e Confei"
    assert parsed.merchant_city == "Sao Paulo do Po"
    assert parsed.amount_cents == 123456
    assert "54071234.56" in payload


def _with_crc(body: str) -> str:
    return body + crc16(body)


def _replace(field: str, new: str, payload: str = BCB_STATIC) -> str:
    return _with_crc(payload[:-4].replace(field, new))


@pytest.mark.parametrize(
    "payload, reason",
    [
        (BCB_STATIC[:-4] + "0000", "CRC"),
        (_replace("5303986", "5303840"), "53"),
        (_replace("5802BR", "5802AR"), "58"),
        (_replace("0014br.gov.bcb.pix", "0014br.gov.bcb.pax"), "GUI"),
        (_replace("52040000", ""), "52"),
        (_replace("5913Fulano de Tal", ""), "59"),
        (_replace("6008BRASILIA", ""), "60"),
        (_with_crc(BCB_DYNAMIC[:-4].replace("010212", "010213")), "01"),
        (_replace("62070503***", "62070503AB-"), "txid"),
        (_replace("000201", "000202"), "00"),
        (_replace("5913Fulano de Tal", "5930Fulano de Tal"), "field"),
        (_with_crc(BCB_DYNAMIC[:-4].replace("0503***", "0503ABC")), "dynamic"),
    ],
)
def test_rejects_broken_payloads(payload, reason):
    with pytest.raises(BrCodeError, match=reason):
        parse(payload)


def test_refuses_to_build_what_it_would_reject():
    with pytest.raises(BrCodeError):
        dynamic_payload(location="https://pix.example.com/x", merchant_name="A", merchant_city="B")
    with pytest.raises(BrCodeError):
        static_payload(pix_key="k", merchant_name="A", merchant_city="B", txid="x" * 26)
    with pytest.raises(BrCodeError):
        dynamic_payload(
            location="p.example.com/x", merchant_name="A", merchant_city="B", amount_cents=0
        )
    with pytest.raises(BrCodeError):
        dynamic_payload(location="p.example.com/" + "x" * 80, merchant_name="A", merchant_city="B")
