"""Which provider serves a request: the sandbox for test-mode keys, a live PSP for live ones.

Without a live provider configured, live-mode requests are refused with 422
`unprocessable_entity` before anything is created.
"""

from flask import current_app

from app.errors import Unprocessable
from app.models import KeyMode
from app.providers.base import PixProvider
from app.providers.sandbox import SandboxPixProvider


def pix_provider(mode: KeyMode) -> PixProvider:
    if mode is KeyMode.TEST:
        return SandboxPixProvider(current_app.config["PUBLIC_BASE_URL"])
    raise Unprocessable(
        "No provider serves Pix in live mode for this account yet; use a test key (ak_test_) "
        "to try the sandbox.",
        code="unprocessable_entity",
    )


def provider_named(name: str, mode: KeyMode) -> PixProvider:
    """The provider that created a record, to act on it later (returns, status)."""
    provider = pix_provider(mode)
    if provider.name != name:
        raise Unprocessable(f"Provider {name} is not configured.")
    return provider
