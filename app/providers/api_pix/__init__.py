"""A live Pix provider speaking the Banco Central's API Pix (`bacen/pix-api` 2.9.0).

`client` talks HTTP to one PSP (OAuth2 over mutual TLS), with its `settings`; `problems`
turns the PSP's answers and RFC 7807 errors into data or our errors; `mapping` turns our
records into its bodies and its answers and webhooks into ours.
"""

from app.providers.api_pix.client import ApiPixClient
from app.providers.api_pix.problems import ApiPixRefused, ApiPixUnavailable
from app.providers.api_pix.settings import ApiPixSettings

__all__ = ["ApiPixClient", "ApiPixRefused", "ApiPixSettings", "ApiPixUnavailable"]
