"""Settings refuse to run unsafely instead of running with a public secret."""

import pytest

from app.config import DEVELOPMENT_SECRET, load_settings, validate_settings


def _settings(monkeypatch, **env):
    for name in ("APP_ENV", "SECRET_KEY", "JWT_SECRET", "IDEMPOTENCY_KEY_TTL_HOURS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return load_settings()


def test_without_app_env_the_service_is_production_and_needs_secrets(monkeypatch):
    settings = _settings(monkeypatch)
    assert settings["APP_ENV"] == "production"
    assert settings["SESSION_COOKIE_SECURE"] is True
    with pytest.raises(RuntimeError, match="SECRET_KEY"):
        validate_settings(settings)


def test_production_with_secrets_starts(monkeypatch):
    validate_settings(_settings(monkeypatch, SECRET_KEY="s" * 40, JWT_SECRET="j" * 40))


def test_development_may_use_the_development_secret(monkeypatch):
    settings = _settings(monkeypatch, APP_ENV="development")
    assert settings["SECRET_KEY"] == DEVELOPMENT_SECRET
    assert settings["SESSION_COOKIE_SECURE"] is False
    validate_settings(settings)


def test_idempotency_keys_are_kept_at_least_a_day(monkeypatch):
    with pytest.raises(RuntimeError, match="IDEMPOTENCY_KEY_TTL_HOURS"):
        validate_settings(
            _settings(monkeypatch, APP_ENV="development", IDEMPOTENCY_KEY_TTL_HOURS="1")
        )
