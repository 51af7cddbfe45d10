"""Fixtures of the dispute tests: a merchant with money to dispute, the evidence storage in a
temporary folder, and an open case on one of its paid charges."""

import pytest

from tests.support import disputes as d
from tests.support.refunds import merchant


@pytest.fixture
def shop(app, monkeypatch):
    return merchant(app, monkeypatch)


@pytest.fixture
def case(app, client, shop, storage_root) -> dict:
    return d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
