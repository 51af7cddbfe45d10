"""Which provider serves a request: the sandbox for test-mode keys, a live PSP for live ones.

The live provider is the Banco Central's API Pix at the PSP `API_PIX_BASE_URL` names. Without
it, live-mode requests are refused with 422 `unprocessable_entity` before anything is created.
Pix-outs (payouts, cashout refunds) have no live provider either way: API Pix only receives
Pix and returns them.
"""

from flask import current_app

from app.errors import Unprocessable
from app.models import KeyMode
from app.providers.api_pix.client import ApiPixClient
from app.providers.api_pix.mapping import payer_document_path
from app.providers.api_pix.provider import ApiPixProvider
from app.providers.api_pix.settings import ApiPixSettings
from app.providers.base import PaymentProvider
from app.providers.sandbox import SandboxProvider

# Where the process's API Pix client lives in `app.extensions`: one per process, so every
# request and job shares its OAuth2 token.
API_PIX_EXTENSION = "api_pix_client"


def provider_for(mode: KeyMode) -> PaymentProvider:
    if mode is KeyMode.TEST:
        return SandboxProvider(current_app.config["PUBLIC_BASE_URL"])
    if live_pix_configured():
        return ApiPixProvider(api_pix_client(), api_pix_payer_path())
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


def payout_provider_for(mode: KeyMode) -> PaymentProvider:
    """The provider that sends payouts in `mode`."""
    provider = provider_for(mode)
    require_pix_out(provider)
    return provider


def sends_pix_out(provider: PaymentProvider) -> bool:
    """Whether `provider` can send a new Pix (a payout, a cashout refund)."""
    return not isinstance(provider, ApiPixProvider)


def require_pix_out(provider: PaymentProvider) -> None:
    if not sends_pix_out(provider):
        raise Unprocessable(
            "Live Pix-outs (payouts, cashout refunds) are not offered: the live provider, the "
            "Banco Central's API Pix, receives Pix and returns them (refund strategy "
            "devolution) but sends none.",
            code="unprocessable_entity",
        )


def live_pix_configured() -> bool:
    return bool(current_app.config.get("API_PIX_BASE_URL"))


def api_pix_client() -> ApiPixClient:
    """The process's client for the configured PSP, made again only when the settings change
    (a test pointing the app at another fake PSP)."""
    settings = ApiPixSettings.from_config(current_app.config)
    client = current_app.extensions.get(API_PIX_EXTENSION)
    if client is None or client.settings != settings:
        client = current_app.extensions[API_PIX_EXTENSION] = ApiPixClient(settings)
    return client


def api_pix_payer_path() -> tuple[str, ...] | None:
    """Where the configured PSP puts the payer's document in a received Pix
    (`API_PIX_PAYER_DOCUMENT_PATH`), None when it reports none."""
    return payer_document_path(current_app.config.get("API_PIX_PAYER_DOCUMENT_PATH"))
