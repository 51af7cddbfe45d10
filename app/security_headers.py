"""Browser hardening headers on every response (pages forbid inline script and framing).

API answers and pages may carry secrets shown once (a new API key, a login token), so
nothing but static assets may be stored by a browser or a proxy, unless a view says
otherwise on purpose (a QR code image, which never changes and holds no secret).
"""

from flask import Flask, request

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
CACHEABLE_PREFIXES = ("/static/", "/v1/docs/assets/")
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def register_security_headers(app: Flask) -> None:
    @app.after_request
    def add_security_headers(response):
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if not request.path.startswith(CACHEABLE_PREFIXES):
            response.headers.setdefault("Cache-Control", "no-store")
        if app.config["SESSION_COOKIE_SECURE"]:
            response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
        return response
