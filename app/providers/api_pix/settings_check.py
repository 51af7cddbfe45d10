"""The start-up check of the API Pix settings, beside the `settings` and `mapping` that read
them (`app.settings_checks` runs it)."""

from pathlib import Path

from app.config import LOCAL_ENVIRONMENTS
from app.providers.api_pix.mapping import payer_document_path
from app.providers.api_pix.settings import ApiPixSettings

# The live PSP's webhook path carries API_PIX_WEBHOOK_SECRET: long enough not to be guessed.
MIN_API_PIX_WEBHOOK_SECRET_LENGTH = 32


def validate_api_pix(config: dict) -> None:
    """With API_PIX_BASE_URL set, live mode runs on that PSP: its settings must be complete,
    its files present and, outside a developer machine, the transport mutual TLS and the
    webhook's path secret long enough not to be guessed."""
    if config["API_PIX_RECONCILE_SECONDS"] < 1:
        raise RuntimeError("API_PIX_RECONCILE_SECONDS must be at least 1.")
    if not config.get("API_PIX_BASE_URL"):
        return
    try:
        settings = ApiPixSettings.from_config(config)
        payer_document_path(config.get("API_PIX_PAYER_DOCUMENT_PATH"))
    except ValueError as error:
        raise RuntimeError(f"{error} (needed because API_PIX_BASE_URL is set).") from error
    files = {
        "API_PIX_CERT_PATH": settings.cert_path,
        "API_PIX_KEY_PATH": settings.key_path,
        "API_PIX_CA_PATH": settings.ca_path,
    }
    for name, path in files.items():
        if path and not Path(path).is_file():
            raise RuntimeError(f"{name} names no file: {path}")
    if config["APP_ENV"] not in LOCAL_ENVIRONMENTS:
        urls = (settings.base_url, settings.token_url)
        if not settings.cert_path or not all(url.startswith("https://") for url in urls):
            raise RuntimeError(
                "API Pix runs over mutual TLS: API_PIX_BASE_URL and API_PIX_TOKEN_URL must be "
                "https:// and API_PIX_CERT_PATH must name the client certificate."
            )
        if len(config.get("API_PIX_WEBHOOK_SECRET") or "") < MIN_API_PIX_WEBHOOK_SECRET_LENGTH:
            raise RuntimeError(
                f"API_PIX_WEBHOOK_SECRET must have at least {MIN_API_PIX_WEBHOOK_SECRET_LENGTH} "
                "characters: it is the only secret in the PSP's webhook path."
            )
