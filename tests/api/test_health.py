"""Liveness and readiness probes."""

import pytest

from app import create_app
from app.api.health import STORAGE_HEALTH


@pytest.fixture(autouse=True)
def _fresh_storage_check(app):
    """Each test sees its own storage, not the answer cached by an earlier check."""
    app.extensions.pop(STORAGE_HEALTH, None)


def test_healthz_says_the_process_is_up(client):
    response = client.get("/healthz")
    assert (response.status_code, response.json) == (200, {"status": "ok"})


def test_readyz_checks_database_and_redis(client, redis):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "ok", "evidence_storage": "ok"},
    }


def test_readyz_answers_503_naming_what_is_down(app):
    broken = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
            "SQLALCHEMY_ENGINE_OPTIONS": app.config["SQLALCHEMY_ENGINE_OPTIONS"],
            "REDIS_URL": "redis://127.0.0.1:1/0",
        }
    )
    response = broken.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.json["checks"] == {
        "database": "ok",
        "redis": "unreachable",
        "evidence_storage": "ok",
    }


def test_readyz_is_degraded_not_unavailable_without_evidence_storage(
    app, client, redis, tmp_path, monkeypatch
):
    gone = tmp_path / "not-a-directory"
    gone.write_text("the storage volume is gone")
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(gone))
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json == {
        "status": "degraded",
        "checks": {"database": "ok", "redis": "ok", "evidence_storage": "unreachable"},
    }
