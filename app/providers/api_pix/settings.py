"""The API Pix client's settings, read by `ApiPixSettings.from_config` from a mapping (the
environment, say):

    API_PIX_BASE_URL          the PSP's API root, e.g. https://pix.example.com/api/v2
    API_PIX_TOKEN_URL         its OAuth2 token endpoint
    API_PIX_CLIENT_ID         OAuth2 client id
    API_PIX_CLIENT_SECRET     OAuth2 client secret (never logged, never in repr)
    API_PIX_RECEIVER_PIX_KEY  the receiver's Pix key, the `chave` of every cob
    API_PIX_SCOPES            default "cob.write cob.read pix.write pix.read webhook.write
                              webhook.read"
    API_PIX_CERT_PATH         client certificate (PEM) for mutual TLS
    API_PIX_KEY_PATH          its private key, when not inside the certificate file
    API_PIX_CA_PATH           CA bundle that signs the PSP's server certificate
    API_PIX_TIMEOUT_SECONDS   per request, default 10
    API_PIX_MAX_RETRIES       retries of a throttled call (429, 503) inside it, default 2
    API_PIX_MAX_RETRY_WAIT_SECONDS
                              the longest wait before such a retry, default 2
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_SCOPES = "cob.write cob.read pix.write pix.read webhook.write webhook.read"
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_WAIT_SECONDS = 2.0
CONFIG_PREFIX = "API_PIX_"


@dataclass(frozen=True)
class ApiPixSettings:
    base_url: str
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    receiver_pix_key: str
    scopes: str = DEFAULT_SCOPES
    cert_path: str | None = None
    key_path: str | None = None
    ca_path: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    max_retry_wait_seconds: float = DEFAULT_MAX_RETRY_WAIT_SECONDS

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "ApiPixSettings":
        """Read the `API_PIX_*` keys; a missing required one is a ValueError naming it."""

        def value(name: str) -> str | None:
            raw = config.get(CONFIG_PREFIX + name.upper())
            return None if raw in (None, "") else str(raw)

        required = ("base_url", "token_url", "client_id", "client_secret", "receiver_pix_key")
        missing = [CONFIG_PREFIX + name.upper() for name in required if value(name) is None]
        if missing:
            raise ValueError(f"API Pix settings missing: {', '.join(missing)}")

        def number(name: str, default: float, kind: type = float) -> float:
            raw, key = value(name), CONFIG_PREFIX + name.upper()
            whole = "whole " if kind is int else ""
            try:
                parsed = default if raw is None else kind(raw)
            except ValueError as error:
                raise ValueError(f"{key} is not a {whole}number: {raw}") from error
            if not math.isfinite(parsed) or parsed < 0:
                raise ValueError(f"{key} must be a non-negative {whole}number: {raw}")
            return parsed

        timeout_seconds = number("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
        if timeout_seconds == 0:
            raise ValueError(f"{CONFIG_PREFIX}TIMEOUT_SECONDS must be positive")
        if value("key_path") and not value("cert_path"):
            raise ValueError(f"{CONFIG_PREFIX}KEY_PATH needs {CONFIG_PREFIX}CERT_PATH")
        return cls(
            base_url=value("base_url").rstrip("/"),
            token_url=value("token_url"),
            client_id=value("client_id"),
            client_secret=value("client_secret"),
            receiver_pix_key=value("receiver_pix_key"),
            scopes=value("scopes") or DEFAULT_SCOPES,
            cert_path=value("cert_path"),
            key_path=value("key_path"),
            ca_path=value("ca_path"),
            timeout_seconds=timeout_seconds,
            max_retries=number("max_retries", DEFAULT_MAX_RETRIES, int),
            max_retry_wait_seconds=number("max_retry_wait_seconds", DEFAULT_MAX_RETRY_WAIT_SECONDS),
        )

    def requests_options(self) -> dict:
        """The TLS and timeout options of every request: the client certificate (`cert`,
        a pair when the key is apart) and the CA bundle (`verify`), given per request so
        REQUESTS_CA_BUNDLE in the environment cannot replace the PSP's CA."""
        cert = (self.cert_path, self.key_path) if self.key_path else self.cert_path
        options = {"timeout": self.timeout_seconds, "verify": self.ca_path or True}
        if cert:
            options["cert"] = cert
        return options
