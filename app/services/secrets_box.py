"""Encryption at rest for secrets the service must be able to read back (webhook signing
secrets): Fernet (AES-128-CBC + HMAC-SHA256) under `SECRETS_ENCRYPTION_KEYS`.

The first key encrypts; every key decrypts (MultiFernet), so keys rotate by putting a new
one first, re-encrypting (`rotate`), then dropping the old one. Without the setting, a key is
derived from SECRET_KEY, so a local run needs nothing; production refuses to start without
it (`app.config.validate_secrets`).
"""

import base64
import hashlib

from cryptography.fernet import Fernet, MultiFernet
from flask import current_app


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
