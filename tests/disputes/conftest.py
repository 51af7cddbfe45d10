"""Fixtures of the dispute tests: a merchant with money to dispute, the evidence storage in a
temporary folder, and an open case on one of its paid charges."""

from pathlib import Path

import pytest

from tests.support import disputes as d
from tests.support.refunds import merchant


@pytest.fixture
def shop(app, monkeypatch):
    return merchant(app, monkeypatch)


@pytest.fixture
def storage_root(app, tmp_path, monkeypatch) -> Path:
    root = tmp_path / "evidence"
    root.mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(root))
    return root


@pytest.fixture
def case(app, client, shop, storage_root) -> dict:
    return d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
