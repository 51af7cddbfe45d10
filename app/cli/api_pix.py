"""`flask api-pix register-webhook`: point the live PSP's webhook at us.

The PSP calls `{webhookUrl}/pix`, so the URL registered is our webhook route without that
suffix: `{PUBLIC_BASE_URL}/v1/api-pix/webhook/{API_PIX_WEBHOOK_SECRET}`. The secret is in the
path, so nothing printed carries it: every URL shown has it replaced by `***`.
"""

import click
from flask import current_app
from flask.cli import AppGroup

from app.providers import api_pix_client
from app.providers.base import ProviderError

api_pix_cli = AppGroup("api-pix", help="The live PSP's API Pix.")
WEBHOOK_PATH = "/v1/api-pix/webhook/"
MASK = "***"


@api_pix_cli.command("register-webhook")
def register_webhook() -> None:
    """Register our webhook for API_PIX_RECEIVER_PIX_KEY and print what the PSP holds."""
    config = current_app.config
    secret = config.get("API_PIX_WEBHOOK_SECRET") or ""
    missing = [
        name for name in ("API_PIX_BASE_URL", "API_PIX_WEBHOOK_SECRET") if not config.get(name)
    ]
    if missing:
        raise click.ClickException(f"Not registered: set {' and '.join(missing)} first.")
    url = f"{config['PUBLIC_BASE_URL']}{WEBHOOK_PATH}{secret}"
    try:
        client = api_pix_client()
        key = client.settings.receiver_pix_key
        client.put_webhook(key, url)
        held = client.get_webhook(key).get("webhookUrl")
    except (ValueError, ProviderError) as error:
        raise click.ClickException(f"Not registered: {_masked(str(error), secret)}") from error
    if held != url:
        raise click.ClickException(
            f"The PSP holds another URL for {key}: {_masked(str(held), secret)}"
        )
    click.echo(f"webhook for {key}: {_masked(held, secret)} (the PSP calls it + /pix)")


def _masked(text: str, secret: str) -> str:
    return text.replace(secret, MASK) if secret else text
