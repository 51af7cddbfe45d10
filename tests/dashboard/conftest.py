"""Fixtures shared by the dashboard's tests: the route-walking tests' shop, and a probe of how
the CSV exports read their rows."""

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from tests.support.dashboard_routes import Shop


@pytest.fixture
def shop(app, monkeypatch, tmp_path) -> Shop:
    """A test account that makes, on first need, a real object for every route's ids."""
    return Shop(app, monkeypatch, tmp_path)


@pytest.fixture
def chunk_sizes():
    """The `yield_per` of every ORM query run meanwhile (None when it reads all at once)."""
    seen = []

    def record(state):
        seen.append(state.execution_options.get("yield_per"))

    event.listen(Session, "do_orm_execute", record)
    yield seen
    event.remove(Session, "do_orm_execute", record)
