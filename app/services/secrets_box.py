"""Encryption at rest for secrets the service must be able to read back (webhook signing
secrets): Fernet (AES-128-CBC + HMAC-SHA256) under `SECRETS_ENCRYPTION_KEYS`.

The first key encrypts; every key decrypts (MultiFernet), so keys rotate by putting a new
one first, re-encrypting (`rotate`), then dropping the old one. Without the setting, a key is
derived from SECRET_KEY, so a local run needs nothing.
"""

import base64
import hashlib

from cryptography.fernet import Fernet, MultiFernet
from flask import current_app


def _box() -> MultiFernet:
    keys = [k.strip() for k in current_app.config["SECRETS_ENCRYPTION_KEYS"].split(",") if k]
    if not keys:
        derived = hashlib.sha256(b"acme-secrets:" + current_app.config["SECRET_KEY"].encode())
        keys = [base64.urlsafe_b64encode(derived.digest()).decode()]
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plaintext: str) -> str:
    return _box().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    return _box().decrypt(ciphertext.encode()).decode()


def rotate(ciphertext: str) -> str:
    """Re-encrypt under the first (newest) key."""
    return _box().rotate(ciphertext.encode()).decode()
