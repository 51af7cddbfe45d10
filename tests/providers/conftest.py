"""A fake API Pix PSP on localhost, and a client pointed at it."""

import pytest

from app.providers.api_pix import ApiPixClient, ApiPixSettings
from tests.support.fake_api_pix import start_fake_api_pix


class FakeClock:
    """A monotonic clock the test moves by hand, to expire tokens without waiting."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def psp():
    fake = start_fake_api_pix(timeout_delay=1.0)
    yield fake
    fake.stop()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def client(psp, clock):
    settings = ApiPixSettings.from_config(psp.config(API_PIX_TIMEOUT_SECONDS="0.5"))
    return ApiPixClient(settings, clock=clock)
