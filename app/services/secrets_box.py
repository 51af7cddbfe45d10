"""Encryption at rest for secrets the service must be able to read back (webhook signing
secrets): Fernet (AES-128-CBC + HMAC-SHA256) under `SECRETS_ENCRYPTION_KEYS`.

The first key encrypts; every key decrypts (MultiFernet), so keys rotate by putting a new
one first, re-encrypting (`rotate`), then dropping the old one. Without the setting, a key is
derived from SECRET_KEY, so a local run needs nothing; production refuses to start without
it (`validate_secrets`, run at start-up by `app.settings_checks`).
"""

import base64
import hashlib

from cryptography.fernet import Fernet, MultiFernet
from flask import current_app

from app.config import LOCAL_ENVIRONMENTS

# HS256 keys shorter than the hash (32 bytes) can be brute-forced offline from one token.
MIN_JWT_SECRET_BYTES = 32


def keys_from_setting(setting: str) -> list[Fernet]:
    """The comma-separated keys of SECRETS_ENCRYPTION_KEYS, newest first; ValueError naming
    the position of a key that is not a Fernet key (never the key itself)."""
    keys = []
    for position, key in enumerate((k.strip() for k in setting.split(",") if k.strip()), 1):
        try:
            keys.append(Fernet(key))
        except ValueError:
            raise ValueError(
                f"key {position} is not a Fernet key (32 url-safe base64-encoded bytes)."
            ) from None
    return keys


def _box() -> MultiFernet:
    keys = keys_from_setting(current_app.config["SECRETS_ENCRYPTION_KEYS"])
    if not keys:
        derived = hashlib.sha256(b"acme-secrets:" + current_app.config["SECRET_KEY"].encode())
        keys = [Fernet(base64.urlsafe_b64encode(derived.digest()))]
    return MultiFernet(keys)


def encrypt(plaintext: str) -> str:
    return _box().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    return _box().decrypt(ciphertext.encode()).decode()


def rotate(ciphertext: str) -> str:
    """Re-encrypt under the first (newest) key."""
    return _box().rotate(ciphertext.encode()).decode()


def validate_secrets(config: dict) -> None:
    """Encryption and signing keys must be well formed everywhere; outside a developer
    machine they must also be set on purpose: a JWT key of its own (so it rotates apart from
    SECRET_KEY) at least 32 bytes long, explicit SECRETS_ENCRYPTION_KEYS (a key derived from
    SECRET_KEY would make every webhook secret unreadable when SECRET_KEY changes), and no
    private webhook destinations."""
    try:
        encryption_keys = keys_from_setting(config["SECRETS_ENCRYPTION_KEYS"])
    except ValueError as error:
        raise RuntimeError(f"SECRETS_ENCRYPTION_KEYS: {error}") from error
    if config["APP_ENV"] in LOCAL_ENVIRONMENTS:
        return
    jwt_keys = [config["JWT_SECRET"], *config.get("JWT_PREVIOUS_SECRETS", [])]
    if config["SECRET_KEY"] in jwt_keys:
        raise RuntimeError("Set JWT_SECRET (and JWT_PREVIOUS_SECRETS) apart from SECRET_KEY.")
    if any(len(key.encode()) < MIN_JWT_SECRET_BYTES for key in jwt_keys):
        raise RuntimeError(
            f"JWT_SECRET and JWT_PREVIOUS_SECRETS keys need at least {MIN_JWT_SECRET_BYTES} "
            "bytes (HS256)."
        )
    if not encryption_keys:
        raise RuntimeError(
            "Set SECRETS_ENCRYPTION_KEYS (Fernet keys encrypting webhook secrets at rest)."
        )
    if config["WEBHOOK_ALLOW_PRIVATE_TEST_URLS"]:
        raise RuntimeError(
            "WEBHOOK_ALLOW_PRIVATE_TEST_URLS is for a developer machine only: it lets "
            "webhooks reach private addresses."
        )
