"""Settings from environment variables (twelve-factor), with defaults for a local machine.

Every variable read here is listed, with its default, in the README's configuration table.
A `.env` file at the project root is loaded first; real environment variables win.
Secure by default: unless APP_ENV says development or testing, the well-known development
secret is refused, so a deployment that forgets a variable fails to start instead of running
with a public signing key.
"""

import json
import os
import re
from datetime import timedelta
from pathlib import Path

from dotenv import load_dotenv

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEVELOPMENT_SECRET = "dev-only-insecure-secret-change-me"  # noqa: S105 (refused outside dev)
LOCAL_ENVIRONMENTS = frozenset({"development", "testing"})
MIN_IDEMPOTENCY_KEY_TTL_HOURS = 24
FEE_PARTIES = ("provider", "platform")
SETTLEMENT_HOLD_PATTERN = re.compile(r"D\+(\d{1,2})|(\d{1,7})s")
PAYMENT_METHODS = ("PIX", "CREDIT_CARD", "MBWAY", "MULTIBANCO", "BOLETO", "CRYPTO")
DEFAULT_FEE_SCHEDULE = {
    "charges": {
        "PIX": {"provider": {"fixed": 0, "bps": 20}, "platform": {"fixed": 0, "bps": 79}},
        "CREDIT_CARD": {"provider": {"fixed": 0, "bps": 250}, "platform": {"fixed": 0, "bps": 149}},
        "MBWAY": {"provider": {"fixed": 10, "bps": 70}, "platform": {"fixed": 0, "bps": 100}},
        "MULTIBANCO": {"provider": {"fixed": 25, "bps": 100}, "platform": {"fixed": 0, "bps": 100}},
        "BOLETO": {"provider": {"fixed": 200, "bps": 0}, "platform": {"fixed": 149, "bps": 0}},
        "CRYPTO": {"provider": {"fixed": 0, "bps": 50}, "platform": {"fixed": 0, "bps": 100}},
    },
    "payouts": {
        "PIX": {"fixed": 100, "bps": 0},
        "TED": {"fixed": 500, "bps": 0},
        "CRYPTO": {"fixed": 0, "bps": 100},
    },
}
PAYOUT_TYPES = ("PIX", "TED", "CRYPTO")


def load_env_file() -> None:
    """Read PROJECT_ROOT/.env into the environment; variables already set are kept."""
    load_dotenv(PROJECT_ROOT / ".env", override=False)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw in (None, "") else int(raw)


def _env_json(name: str, default):
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        return json.loads(raw)
    except ValueError as error:
        raise RuntimeError(f"{name} is not valid JSON: {error}") from error


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def instance_path() -> Path:
    """Where local state (the SQLite database, local files) lives unless configured otherwise."""
    return Path(os.environ.get("INSTANCE_PATH", PROJECT_ROOT / "instance")).resolve()


def default_database_url() -> str:
    return f"sqlite:///{instance_path() / 'acme.db'}"


def load_settings() -> dict:
    """Read the environment into a Flask config mapping."""
    load_env_file()
    app_env = os.environ.get("APP_ENV", "production")
    secret_key = os.environ.get("SECRET_KEY", DEVELOPMENT_SECRET)
    database_url = os.environ.get("DATABASE_URL") or default_database_url()
    return {
        "APP_ENV": app_env,
        "SECRET_KEY": secret_key,
        "JWT_SECRET": os.environ.get("JWT_SECRET", secret_key),
        "JWT_PREVIOUS_SECRETS": _env_list("JWT_PREVIOUS_SECRETS"),
        "JWT_LIFETIME_SECONDS": _env_int("JWT_LIFETIME_SECONDS", 3600),
        "LOGIN_MAX_FAILURES": _env_int("LOGIN_MAX_FAILURES", 5),
        "LOGIN_MAX_FAILURES_PER_IP": _env_int("LOGIN_MAX_FAILURES_PER_IP", 20),
        "LOGIN_FAILURE_WINDOW_SECONDS": _env_int("LOGIN_FAILURE_WINDOW_SECONDS", 900),
        "TRUSTED_PROXY_HOPS": _env_int("TRUSTED_PROXY_HOPS", 0),
        "API_RATE_LIMIT_PER_MINUTE": _env_int("API_RATE_LIMIT_PER_MINUTE", 600),
        "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE": _env_int(
            "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE", 1200
        ),
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SQLALCHEMY_ENGINE_OPTIONS": engine_options(database_url),
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "PUBLIC_BASE_URL": os.environ.get("PUBLIC_BASE_URL", "http://127.0.0.1:5000").rstrip("/"),
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "INFO"),
        "IDEMPOTENCY_KEY_TTL_HOURS": _env_int("IDEMPOTENCY_KEY_TTL_HOURS", 24),
        "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": _env_int("IDEMPOTENCY_LOCK_TIMEOUT_SECONDS", 60),
        "API_KEY_LAST_USED_RESOLUTION_SECONDS": _env_int(
            "API_KEY_LAST_USED_RESOLUTION_SECONDS", 60
        ),
        "FEE_SCHEDULE": _env_json("FEE_SCHEDULE", DEFAULT_FEE_SCHEDULE),
        "FRAUD_VELOCITY_WINDOW_SECONDS": _env_int("FRAUD_VELOCITY_WINDOW_SECONDS", 3600),
        "FRAUD_MAX_LIVE_CHARGES_PER_CUSTOMER": _env_int("FRAUD_MAX_LIVE_CHARGES_PER_CUSTOMER", 5),
        "FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT": _env_int("FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT", 1000),
        "CHARGE_EXPIRY_SWEEP_SECONDS": _env_int("CHARGE_EXPIRY_SWEEP_SECONDS", 10),
        "PAYMENT_FINALISE_SWEEP_SECONDS": _env_int("PAYMENT_FINALISE_SWEEP_SECONDS", 10),
        "PAYMENT_TOTALS_FOLD_SECONDS": _env_int("PAYMENT_TOTALS_FOLD_SECONDS", 60),
        "REFUND_POLL_SECONDS": _env_int("REFUND_POLL_SECONDS", 30),
        "SETTLEMENT_HOLD": os.environ.get("SETTLEMENT_HOLD") or "D+1",
        "PAYOUT_TRANSACTION_CAP": _env_int("PAYOUT_TRANSACTION_CAP", 10_000_000),
        "PAYOUT_DAILY_CAP_MULTIPLIER": _env_int("PAYOUT_DAILY_CAP_MULTIPLIER", 5),
        "WITHDRAWALS_AUTO_APPROVE_THRESHOLD": _env_int(
            "WITHDRAWALS_AUTO_APPROVE_THRESHOLD", 100_000
        ),
        "PAYOUT_SWEEP_SECONDS": _env_int("PAYOUT_SWEEP_SECONDS", 30),
        "SECRETS_ENCRYPTION_KEYS": os.environ.get("SECRETS_ENCRYPTION_KEYS", ""),
        "WEBHOOK_MAX_ATTEMPTS": _env_int("WEBHOOK_MAX_ATTEMPTS", 15),
        "WEBHOOK_TIMEOUT_SECONDS": _env_int("WEBHOOK_TIMEOUT_SECONDS", 30),
        "WEBHOOK_ENDPOINT_CONCURRENCY": _env_int("WEBHOOK_ENDPOINT_CONCURRENCY", 2),
        "WEBHOOK_SENDERS": _env_int("WEBHOOK_SENDERS", 32),
        "WEBHOOK_SWEEP_SECONDS": _env_int("WEBHOOK_SWEEP_SECONDS", 15),
        "WEBHOOK_FAILING_ENDPOINT_ALERT": _env_int("WEBHOOK_FAILING_ENDPOINT_ALERT", 5),
        "WEBHOOK_ALLOW_PRIVATE_TEST_URLS": _env_bool(
            "WEBHOOK_ALLOW_PRIVATE_TEST_URLS", app_env in LOCAL_ENVIRONMENTS
        ),
        "MAIL_BACKEND": os.environ.get("MAIL_BACKEND", "console"),
        "MAIL_FROM": os.environ.get("MAIL_FROM", "Acme Pay <no-reply@acmepay.example.com>"),
        "SMTP_HOST": os.environ.get("SMTP_HOST", "localhost"),
        "SMTP_PORT": _env_int("SMTP_PORT", 587),
        "SMTP_USERNAME": os.environ.get("SMTP_USERNAME", ""),
        "SMTP_PASSWORD": os.environ.get("SMTP_PASSWORD", ""),
        "SMTP_STARTTLS": _env_bool("SMTP_STARTTLS", True),
        "EVIDENCE_STORAGE": os.environ.get("EVIDENCE_STORAGE") or "local",
        "EVIDENCE_STORAGE_PATH": os.environ.get("EVIDENCE_STORAGE_PATH", ""),
        "EVIDENCE_S3_ENDPOINT": os.environ.get("EVIDENCE_S3_ENDPOINT", "").rstrip("/"),
        "EVIDENCE_S3_BUCKET": os.environ.get("EVIDENCE_S3_BUCKET", ""),
        "EVIDENCE_S3_REGION": os.environ.get("EVIDENCE_S3_REGION") or "us-east-1",
        "EVIDENCE_S3_ACCESS_KEY_ID": os.environ.get("EVIDENCE_S3_ACCESS_KEY_ID", ""),
        "EVIDENCE_S3_SECRET_ACCESS_KEY": os.environ.get("EVIDENCE_S3_SECRET_ACCESS_KEY", ""),
        "EVIDENCE_S3_SESSION_TOKEN": os.environ.get("EVIDENCE_S3_SESSION_TOKEN", ""),
        "EVIDENCE_S3_ADDRESSING": os.environ.get("EVIDENCE_S3_ADDRESSING") or "path",
        "EVIDENCE_S3_TIMEOUT_SECONDS": _env_int("EVIDENCE_S3_TIMEOUT_SECONDS", 5),
        "SETTLEMENT_RELEASE_SWEEP_SECONDS": _env_int("SETTLEMENT_RELEASE_SWEEP_SECONDS", 60),
        "DISPUTE_OUTCOME_EVENTS": _env_bool("DISPUTE_OUTCOME_EVENTS", True),
        "DISPUTE_NOTICE_SWEEP_SECONDS": _env_int("DISPUTE_NOTICE_SWEEP_SECONDS", 60),
        "SANDBOX_DISPUTE_RESPONSE_HOURS": _env_int("SANDBOX_DISPUTE_RESPONSE_HOURS", 72),
        "API_PIX_BASE_URL": os.environ.get("API_PIX_BASE_URL", "").rstrip("/"),
        "API_PIX_TOKEN_URL": os.environ.get("API_PIX_TOKEN_URL", ""),
        "API_PIX_CLIENT_ID": os.environ.get("API_PIX_CLIENT_ID", ""),
        "API_PIX_CLIENT_SECRET": os.environ.get("API_PIX_CLIENT_SECRET", ""),
        "API_PIX_RECEIVER_PIX_KEY": os.environ.get("API_PIX_RECEIVER_PIX_KEY", ""),
        # Scopes and timeout: ApiPixSettings.from_config applies the defaults and checks them.
        "API_PIX_SCOPES": os.environ.get("API_PIX_SCOPES", ""),
        "API_PIX_CERT_PATH": os.environ.get("API_PIX_CERT_PATH", ""),
        "API_PIX_KEY_PATH": os.environ.get("API_PIX_KEY_PATH", ""),
        "API_PIX_CA_PATH": os.environ.get("API_PIX_CA_PATH", ""),
        "API_PIX_TIMEOUT_SECONDS": os.environ.get("API_PIX_TIMEOUT_SECONDS", ""),
        "API_PIX_MAX_RETRIES": os.environ.get("API_PIX_MAX_RETRIES", ""),
        "API_PIX_MAX_RETRY_WAIT_SECONDS": os.environ.get("API_PIX_MAX_RETRY_WAIT_SECONDS", ""),
        # Where the PSP puts the payer's document in a received Pix, or "none" (the standard).
        "API_PIX_PAYER_DOCUMENT_PATH": os.environ.get("API_PIX_PAYER_DOCUMENT_PATH", "none"),
        "API_PIX_WEBHOOK_SECRET": os.environ.get("API_PIX_WEBHOOK_SECRET", ""),
        "API_PIX_RECONCILE_SECONDS": _env_int("API_PIX_RECONCILE_SECONDS", 300),
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": _env_bool(
            "SESSION_COOKIE_SECURE", app_env not in LOCAL_ENVIRONMENTS
        ),
        "PERMANENT_SESSION_LIFETIME": timedelta(hours=_env_int("DASHBOARD_SESSION_HOURS", 12)),
        "WTF_CSRF_TIME_LIMIT": None,
        "MAX_CONTENT_LENGTH": _env_int("MAX_CONTENT_LENGTH", 1024 * 1024),
        "API_TITLE": "Acme Pay API",
        "API_VERSION": "v1",
        "OPENAPI_VERSION": "3.0.3",
        "OPENAPI_URL_PREFIX": "/v1",
        "OPENAPI_JSON_PATH": "openapi.json",
        "OPENAPI_SWAGGER_UI_PATH": "docs",
        "OPENAPI_SWAGGER_UI_URL": "/v1/docs/assets/",
    }


def engine_options(database_url: str) -> dict:
    """Connection settings per backend: a busy timeout for SQLite. A process keeps up to 10
    connections, at least one per gunicorn thread (8 a worker, deploy/gunicorn.conf.py), so a
    busy worker reuses them rather than opening and closing overflow ones; 15 at most, as
    before, for PostgreSQL's max_connections. A connection the server closed is replaced at
    checkout without a round trip (`app.extensions._replace_dropped_connection`), not pinged."""
    if database_url.startswith("sqlite"):
        return {"connect_args": {"timeout": 30, "check_same_thread": False}}
    return {"pool_recycle": 1800, "pool_size": 10, "max_overflow": 5}


def validate_config(config: dict) -> None:
    """Refuse to start with settings that would be unsafe, rather than run with them: the
    ones this module owns. The parts that read settings of their own check those beside
    their code, and `app.settings_checks` runs every check."""
    if config["APP_ENV"] not in LOCAL_ENVIRONMENTS and DEVELOPMENT_SECRET in (
        config["SECRET_KEY"],
        config["JWT_SECRET"],
    ):
        raise RuntimeError(
            "Set SECRET_KEY (and JWT_SECRET) or, on a developer machine, APP_ENV=development."
        )
    validate_fee_schedule(config["FEE_SCHEDULE"])
    if not SETTLEMENT_HOLD_PATTERN.fullmatch(config["SETTLEMENT_HOLD"]):
        raise RuntimeError("SETTLEMENT_HOLD is D+<business days> (e.g. D+1) or <seconds>s.")
    if config["IDEMPOTENCY_KEY_TTL_HOURS"] < MIN_IDEMPOTENCY_KEY_TTL_HOURS:
        raise RuntimeError(
            f"IDEMPOTENCY_KEY_TTL_HOURS must be at least {MIN_IDEMPOTENCY_KEY_TTL_HOURS}."
        )
    if config["LOGIN_MAX_FAILURES"] < 1 or config["LOGIN_FAILURE_WINDOW_SECONDS"] < 1:
        raise RuntimeError(
            "LOGIN_MAX_FAILURES and LOGIN_FAILURE_WINDOW_SECONDS must be at least 1."
        )
    for name in (
        "API_RATE_LIMIT_PER_MINUTE",
        "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE",
        "WEBHOOK_ENDPOINT_CONCURRENCY",
        "WEBHOOK_SENDERS",
    ):
        if config[name] < 1:
            raise RuntimeError(f"{name} must be at least 1.")
    if config["TRUSTED_PROXY_HOPS"] < 0:
        raise RuntimeError("TRUSTED_PROXY_HOPS must be 0 (no proxy in front) or more.")
    if config["LOGIN_MAX_FAILURES_PER_IP"] < 0:
        raise RuntimeError("LOGIN_MAX_FAILURES_PER_IP must be 0 (no limit per address) or more.")


def validate_fee_schedule(schedule: dict) -> None:
    """Every payment method needs a provider and a platform rule, every payout type one rule,
    each {fixed, bps} of non-negative integers. So a settlement or a payout never fails for
    want of a fee."""
    methods = schedule.get("charges") if isinstance(schedule, dict) else None
    missing = [m for m in PAYMENT_METHODS if not isinstance(methods, dict) or m not in methods]
    if missing:
        names = ", ".join(f"charges.{method}" for method in missing)
        raise RuntimeError(f"FEE_SCHEDULE needs {names} (provider and platform rules).")
    for method, rules in methods.items():
        for party in FEE_PARTIES:
            _check_fee_rule(
                rules.get(party) if isinstance(rules, dict) else None, f"charges.{method}.{party}"
            )
    payouts = schedule.get("payouts")
    for payout_type in PAYOUT_TYPES:
        rule = payouts.get(payout_type) if isinstance(payouts, dict) else None
        _check_fee_rule(rule, f"payouts.{payout_type}")


def _check_fee_rule(rule, where: str) -> None:
    values = (rule or {}).get("fixed"), (rule or {}).get("bps")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise RuntimeError(
            f"FEE_SCHEDULE {where} needs non-negative integers 'fixed' (minor units) and "
            "'bps' (basis points)."
        )
