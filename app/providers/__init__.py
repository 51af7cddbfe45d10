"""Which provider serves a request: the sandbox for test-mode keys, a live PSP for live ones.

Without a live provider configured, live-mode requests are refused with 422
`unprocessable_entity` before anything is created.
"""

from flask import current_app

from app.errors import Unprocessable
from app.models import KeyMode
from app.providers.base import PaymentProvider
from app.providers.sandbox import SandboxProvider


def provider_for(mode: KeyMode) -> PaymentProvider:
    if mode is KeyMode.TEST:
        return SandboxProvider(current_app.config["PUBLIC_BASE_URL"])
    raise Unprocessable(
        "No provider serves Pix in live mode for this account yet; use a test key (ak_test_) "
        "to try the sandbox.",
        code="unprocessable_entity",
    )


def provider_named(name: str, mode: KeyMode) -> PaymentProvider:
    """The provider that created a record, to act on it later (returns, status)."""
    provider = provider_for(mode)
    if provider.name != name:
        raise Unprocessable(f"Provider {name} is not configured.")
    return provider
