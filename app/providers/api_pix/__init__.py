"""A live Pix provider speaking the Banco Central's API Pix (`bacen/pix-api` 2.9.0).

`client` talks HTTP to one PSP (OAuth2 over mutual TLS, RFC 7807 errors); `mapping` turns
our records into its bodies and its answers and webhooks into ours.
"""

from app.providers.api_pix.client import (
    ApiPixClient,
    ApiPixRefused,
    ApiPixSettings,
    ApiPixUnavailable,
)

__all__ = ["ApiPixClient", "ApiPixRefused", "ApiPixSettings", "ApiPixUnavailable"]
