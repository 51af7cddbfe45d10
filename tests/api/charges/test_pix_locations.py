"""Real host names fit in a BR Code: a charge's location is `<host>/v1/qr/<22 characters>`,
so a PUBLIC_BASE_URL host of up to 45 characters (48 with a path) leaves a valid code whose
location answers over HTTP; codes issued under `/v1/pix/locations/<hex>` keep answering,
and start-up refuses a PUBLIC_BASE_URL too long for any code."""

from urllib.parse import urlsplit

import pytest

from app.config import load_settings
from app.pix import brcode, locations
from app.settings_checks import validate_settings
from tests.support import factories
from tests.support.charges import created
from tests.support.http import assert_error

HOST_39 = "pagamentos.minha-loja-de-exemplo.com.br"
HOST_45 = "checkout-pagamentos.minha-loja-exemplo.com.br"


@pytest.fixture
def api_key(app):
    return factories.make_api_key(app, factories.make_account(app))


def _path(location: str, host: str) -> str:
    assert location.startswith(f"{host}/")
    return location.removeprefix(host)


@pytest.mark.parametrize("host", [HOST_39, HOST_45])
def test_a_long_real_host_name_gets_a_valid_code_whose_location_answers(
    app, client, api_key, monkeypatch, host
):
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", f"https://{host}")

    charge = created(client, api_key, amount=2590)

    assert charge["status"] == "pending", charge
    code = brcode.parse(charge["pix"]["br_code"])  # checks every length and the CRC
    assert code.is_dynamic and code.amount_cents == 2590
    assert len(code.location) <= brcode.MAX_KEY_OR_LOCATION
    path = _path(code.location, host)
    assert path.startswith("/v1/qr/") and len(path) == len("/v1/qr/") + 22
    answer = client.get(path)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["txid"] == charge["pix"]["txid"]
    assert answer.get_json()["valor"] == {"original": "25.90"}


def test_codes_issued_under_the_hex_address_keep_answering(client, api_key):
    charge = created(client, api_key)
    qr_path = urlsplit(charge["pix"]["qr_code_url"]).path
    hex_id = qr_path.removeprefix("/v1/pix/locations/").removesuffix("/qr.png")
    code = brcode.parse(charge["pix"]["br_code"])

    assert code.location == f"localhost/v1/qr/{locations.compact_id(hex_id)}"
    old = client.get(f"/v1/pix/locations/{hex_id}")
    new = client.get(_path(code.location, "localhost"))
    assert old.status_code == new.status_code == 200
    assert old.get_json() == new.get_json()


@pytest.mark.parametrize(
    "code_id",
    ["unknown", "0" * 22, "z" * 22, "0" * 21 + "-", "0" * 23, "%C3%A9" + "0" * 21],
    ids=["short", "unissued", "over-128-bits", "not-base62", "long", "non-ascii"],
)
def test_an_address_naming_no_code_is_a_404(client, api_key, code_id):
    created(client, api_key)
    assert_error(client.get(f"/v1/qr/{code_id}"), 404, "not_found_error", "not_found")


def test_the_compact_id_spells_every_128_bit_id_once():
    for hex_id in ("0" * 32, "f" * 32, "0123456789abcdef" * 2, "00000000000000000000000000000001"):
        compact = locations.compact_id(hex_id)
        assert len(compact) == 22 and compact.isascii() and compact.isalnum()
        assert locations.location_id(compact) == hex_id
    assert locations.location_id("z" * 22) is None  # past 2**128


@pytest.mark.parametrize(
    "base_url",
    [f"https://{HOST_45}", f"https://{HOST_45}/", "https://pix.example.com.br/pagamentos/loja-01"],
)
def test_start_up_accepts_a_base_url_whose_locations_fit(monkeypatch, base_url):
    monkeypatch.setenv("APP_ENV", "testing")
    monkeypatch.setenv("PUBLIC_BASE_URL", base_url)
    validate_settings(load_settings())


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("https://pagamentos-online-sp.minha-loja-de-exemplo.com.br", "may have 48, not 49"),
        (f"https://{HOST_45}/pix/br", "may have 48, not 52"),
        ("https://pagamentos.exemplo-ação.com.br", "ASCII"),
    ],
)
def test_start_up_refuses_a_base_url_too_long_for_a_br_code(monkeypatch, base_url, message):
    monkeypatch.setenv("APP_ENV", "testing")
    monkeypatch.setenv("PUBLIC_BASE_URL", base_url)
    with pytest.raises(RuntimeError, match="PUBLIC_BASE_URL") as refusal:
        validate_settings(load_settings())
    assert message in str(refusal.value)
