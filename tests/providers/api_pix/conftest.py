"""A fake API Pix PSP on localhost, a client pointed at it, and live mode on the app pointed
at it with a merchant holding a live key."""

import pytest

from app.models import KeyMode
from app.providers import API_PIX_EXTENSION
from app.providers.api_pix import ApiPixClient, ApiPixSettings
from tests.support import factories, refunds
from tests.support.fake_api_pix import CLIENT_TIMEOUT_SECONDS, TlsFiles, start_fake_api_pix


class FakeClock:
    """A monotonic clock the test moves by hand, to expire tokens without waiting."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> TlsFiles:
    """One set of CAs and certificates for the session: making them per test is waste."""
    return TlsFiles.make(tmp_path_factory.mktemp("api-pix-tls"))


@pytest.fixture
def psp():
    """The fake PSP over plain HTTP (`test_api_pix_tls` overrides it with mutual TLS); its
    teardown (`stop`) fails the test when a request or an answer broke the API Pix
    standard, listing what did."""
    fake = start_fake_api_pix()
    yield fake
    fake.stop()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def client(psp, clock):
    settings = ApiPixSettings.from_config(
        psp.config(API_PIX_TIMEOUT_SECONDS=CLIENT_TIMEOUT_SECONDS)
    )
    return ApiPixClient(settings, clock=clock)


@pytest.fixture
def api(app):
    """The Flask test client (`client` here is the API Pix client of this folder's conftest)."""
    return app.test_client()


@pytest.fixture
def merchant(app, monkeypatch):
    """A fee-free merchant with a live key, its settlements released at once."""
    test_mode = refunds.merchant(app, monkeypatch)
    live_key = factories.make_api_key(app, test_mode.account_id, KeyMode.LIVE)
    return refunds.Merchant(account_id=test_mode.account_id, api_key=live_key)


@pytest.fixture
def live(app, monkeypatch, psp):
    """Live mode on, pointed at the fake PSP, with a fresh api (and token cache)."""
    for name, value in psp.config(API_PIX_TIMEOUT_SECONDS=CLIENT_TIMEOUT_SECONDS).items():
        monkeypatch.setitem(app.config, name, value)
    monkeypatch.delitem(app.extensions, API_PIX_EXTENSION, raising=False)
    return psp
