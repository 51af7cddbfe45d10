"""Fixtures shared by the dashboard's route-walking tests."""

import pytest

from tests.support.dashboard_routes import Shop


@pytest.fixture
def shop(app, monkeypatch, tmp_path) -> Shop:
    """A test account that makes, on first need, a real object for every route's ids."""
    return Shop(app, monkeypatch, tmp_path)
