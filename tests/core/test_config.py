"""Settings refuse to run unsafely instead of running with a public secret, and every one
of them is documented."""

import io
import re

import pytest
from cryptography.fernet import Fernet
from dotenv import dotenv_values

from app.config import DEVELOPMENT_SECRET, PROJECT_ROOT, load_settings
from app.providers.api_pix.settings import DEFAULT_SCOPES, DEFAULT_TIMEOUT_SECONDS, ApiPixSettings
from app.settings_checks import validate_settings

SETTINGS_UNDER_TEST = (
    "APP_ENV",
    "SECRET_KEY",
    "JWT_SECRET",
    "JWT_PREVIOUS_SECRETS",
    "SECRETS_ENCRYPTION_KEYS",
    "WEBHOOK_ALLOW_PRIVATE_TEST_URLS",
    "IDEMPOTENCY_KEY_TTL_HOURS",
)
PRODUCTION = {
    "SECRET_KEY": "s" * 40,
    "JWT_SECRET": "j" * 40,
    "SECRETS_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
}


def _settings(monkeypatch, **env):
    for name in SETTINGS_UNDER_TEST:
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
    validate_settings(_settings(monkeypatch, **PRODUCTION))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SECRETS_ENCRYPTION_KEYS": ""}, "Set SECRETS_ENCRYPTION_KEYS"),
        ({"SECRETS_ENCRYPTION_KEYS": " , "}, "Set SECRETS_ENCRYPTION_KEYS"),
        ({"WEBHOOK_ALLOW_PRIVATE_TEST_URLS": "1"}, "WEBHOOK_ALLOW_PRIVATE_TEST_URLS"),
        ({"JWT_SECRET": "j" * 31}, "at least 32 bytes"),
        ({"JWT_PREVIOUS_SECRETS": "p" * 40 + ",short"}, "at least 32 bytes"),
        ({"JWT_SECRET": "s" * 40}, "apart from SECRET_KEY"),
        ({"JWT_SECRET": None}, "apart from SECRET_KEY"),
        ({"JWT_PREVIOUS_SECRETS": "s" * 40}, "apart from SECRET_KEY"),
    ],
)
def test_production_refuses_weak_or_missing_keys_and_private_webhooks(monkeypatch, change, message):
    """Each setting that would weaken production stops start-up with a message naming it."""
    env = {name: value for name, value in (PRODUCTION | change).items() if value is not None}
    with pytest.raises(RuntimeError, match=message):
        validate_settings(_settings(monkeypatch, **env))


def test_a_malformed_encryption_key_stops_start_up_without_being_shown(monkeypatch):
    good = PRODUCTION["SECRETS_ENCRYPTION_KEYS"]
    bad = "not-a-fernet-key-" + "x" * 20
    for app_env in ("development", "production"):
        env = PRODUCTION | {"APP_ENV": app_env, "SECRETS_ENCRYPTION_KEYS": f"{good},{bad}"}
        with pytest.raises(RuntimeError, match="key 2 is not a Fernet key") as refused:
            validate_settings(_settings(monkeypatch, **env))
        assert bad not in str(refused.value) and good not in str(refused.value)


def test_previous_jwt_keys_are_a_comma_separated_list(monkeypatch):
    settings = _settings(monkeypatch, **PRODUCTION, JWT_PREVIOUS_SECRETS=" a , ,b ")
    assert settings["JWT_PREVIOUS_SECRETS"] == ["a", "b"]


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


def test_every_environment_variable_the_code_reads_is_in_the_readme():
    """Is the README's configuration table complete (a new setting cannot go undocumented)?"""
    root = PROJECT_ROOT
    pattern = re.compile(r"(?:environ\.get|_env_(?:int|float|bool|list))\(\s*\"([A-Z][A-Z0-9_]+)\"")
    sources = [*root.joinpath("app").rglob("*.py"), root / "worker.py", root / "wsgi.py"]
    read = {name for path in sources for name in pattern.findall(path.read_text())}
    readme = root.joinpath("README.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, re.MULTILINE))
    assert read, "no settings found: the pattern is stale"
    assert read <= documented, sorted(read - documented)


@pytest.mark.parametrize(("raw", "message"), [("{}", "charges.PIX"), ("{oops", "not valid JSON")])
def test_a_fee_schedule_from_the_environment_is_checked_at_start(monkeypatch, raw, message):
    monkeypatch.setenv("FEE_SCHEDULE", raw)
    with pytest.raises(RuntimeError, match=message):
        validate_settings(_settings(monkeypatch, APP_ENV="testing"))


@pytest.mark.parametrize(("app_env", "allowed"), [("development", True), ("production", False)])
def test_private_test_webhook_urls_are_allowed_only_on_a_developer_machine(
    monkeypatch, app_env, allowed
):
    settings = _settings(monkeypatch, APP_ENV=app_env, SECRET_KEY="s" * 32)
    assert settings["WEBHOOK_ALLOW_PRIVATE_TEST_URLS"] is allowed


def test_api_pix_defaults_and_checks_come_from_its_settings(monkeypatch):
    """Scopes and timeout have one default, ApiPixSettings's; a bad timeout stops start-up."""
    psp = {
        "API_PIX_BASE_URL": "http://psp.test/api/v2",
        "API_PIX_TOKEN_URL": "http://psp.test/oauth/token",
        "API_PIX_CLIENT_ID": "acme",
        "API_PIX_CLIENT_SECRET": "acme-secret",
        "API_PIX_RECEIVER_PIX_KEY": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906",
        "API_PIX_SCOPES": "",
        "API_PIX_TIMEOUT_SECONDS": "",
    }
    settings = _settings(monkeypatch, APP_ENV="testing", **psp)
    validate_settings(settings)
    api_pix = ApiPixSettings.from_config(settings)
    assert (api_pix.scopes, api_pix.timeout_seconds) == (DEFAULT_SCOPES, DEFAULT_TIMEOUT_SECONDS)

    monkeypatch.setenv("API_PIX_TIMEOUT_SECONDS", "soon")
    with pytest.raises(RuntimeError, match="API_PIX_TIMEOUT_SECONDS is not a number"):
        validate_settings(load_settings())


def _env_example() -> tuple[dict[str, str], list[str]]:
    """`.env.example` as dotenv reads it: its set variables, and each commented-out example
    (`# NAME=value`) as the line a developer gets by deleting the `# `."""
    text = PROJECT_ROOT.joinpath(".env.example").read_text()
    examples = re.findall(r"^# ?([A-Z][A-Z0-9_]*=.*)$", text, re.MULTILINE)
    return dotenv_values(stream=io.StringIO(text)), examples


def _uncommented(monkeypatch, lines: list[str]) -> dict:
    """The settings with `.env.example`'s variables and these example lines set."""
    active, _ = _env_example()
    example = {**active, **dotenv_values(stream=io.StringIO("\n".join(lines)))}
    for name in {*SETTINGS_UNDER_TEST, *example}:
        monkeypatch.delenv(name, raising=False)
    return _settings(monkeypatch, **{name: value or "" for name, value in example.items()})


@pytest.mark.parametrize("line", _env_example()[1], ids=lambda line: line.split("=")[0])
def test_each_commented_example_in_env_example_passes_the_settings_checks(monkeypatch, line):
    """Uncommenting one line of `.env.example` never stops start-up."""
    validate_settings(_uncommented(monkeypatch, [line]))


def test_env_example_with_every_example_uncommented_passes_the_settings_checks(monkeypatch):
    _, examples = _env_example()
    assert len(examples) >= 10, "no examples found: the pattern is stale"
    settings = _uncommented(monkeypatch, examples)
    validate_settings(settings)
    assert settings["FEE_SCHEDULE"]["charges"]["PIX"]["platform"] == {"fixed": 0, "bps": 79}
