"""Mutual TLS in a real handshake: the app's `ApiPixClient` against the fake PSP serving HTTPS
and requiring a client certificate. The right certificate and CA get a token and a cob; a
missing or foreign client certificate, or the system CAs instead of the PSP's, fail as
`connection_error` before anything reaches the PSP's books."""

import pytest

from app.providers.api_pix import ApiPixClient, ApiPixSettings, ApiPixUnavailable
from tests.providers.api_pix.test_live_charges import live_charge, txid_of
from tests.support.fake_api_pix import RECEIVER_KEY, start_fake_api_pix

TXID = "0b0e5f4e8f0a4c559a8e3f1d2a6b7c8d"
COB = {"calendario": {"expiracao": 3600}, "valor": {"original": "12.34"}, "chave": RECEIVER_KEY}


@pytest.fixture
def psp(tls_files):
    """Overrides the folder's plain-HTTP fake, so `live` and `client` go over mutual TLS."""
    fake = start_fake_api_pix(tls=tls_files)
    yield fake
    fake.stop()


def client_for(psp, **overrides) -> ApiPixClient:
    return ApiPixClient(ApiPixSettings.from_config(psp.config(**overrides)))


@pytest.mark.parametrize("key_in_cert", [False, True], ids=["key-apart", "one-pem"])
def test_a_token_and_a_cob_pass_the_handshake(psp, key_in_cert):
    cob = client_for(psp, key_in_cert=key_in_cert).put_cob(TXID, COB)

    assert psp.url.startswith("https://")
    assert cob["status"] == "ATIVA"
    assert [(call.method, call.path) for call in psp.requests] == [
        ("POST", "/oauth/token"),
        ("PUT", f"/cob/{TXID}"),
    ]


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"API_PIX_CERT_PATH": "", "API_PIX_KEY_PATH": ""}, id="no-client-cert"),
        pytest.param("stranger", id="client-cert-of-another-ca"),
        pytest.param({"API_PIX_CA_PATH": ""}, id="system-cas-not-the-psps"),
    ],
)
def test_a_handshake_that_fails_reaches_nothing(psp, tls_files, overrides):
    if overrides == "stranger":
        overrides = {"API_PIX_CERT_PATH": str(tls_files.stranger_combined), "API_PIX_KEY_PATH": ""}

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client_for(psp, **overrides).put_cob(TXID, COB)

    assert unavailable.value.code == "connection_error"
    assert psp.requests == []
    assert psp.tokens_issued == 0
    assert psp.cobs == {}


def test_a_live_charge_goes_through_the_api_over_mutual_tls(api, merchant, live):
    charge = live_charge(api, merchant, amount=4_321)

    assert live.url.startswith("https://")
    assert charge["status"] == "pending"
    assert live.cobs[txid_of(charge)]["valor"] == {"original": "43.21"}
    assert charge["pix"]["br_code"] == live.cobs[txid_of(charge)]["pixCopiaECola"]
