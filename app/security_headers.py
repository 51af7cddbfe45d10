"""Browser hardening headers on every response (pages forbid inline script, inline style
and framing; the API reference's Swagger UI keeps to that too).

Scripts may connect to this service and to the evidence storage's upload origin only: the
dispute page sends files straight to a signed storage address.

API answers and pages may carry secrets shown once (a new API key, a login token), so
nothing but static assets may be stored by a browser or a proxy, unless a view says
otherwise on purpose (a QR code image, which never changes and holds no secret).
"""

from flask import Flask, request

from app.storage import evidence_storage

CACHEABLE_PREFIXES = ("/static/", "/v1/docs/assets/")


def content_security_policy(upload_origin: str) -> str:
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; "
        f"img-src 'self' data:; connect-src 'self' {upload_origin}; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'self'"
    )


def register_security_headers(app: Flask) -> None:
    headers = {
        "Content-Security-Policy": content_security_policy(evidence_storage(app).upload_origin()),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }

    @app.after_request
    def add_security_headers(response):
        for name, value in headers.items():
            response.headers.setdefault(name, value)
        if not request.path.startswith(CACHEABLE_PREFIXES):
            response.headers.setdefault("Cache-Control", "no-store")
        if app.config["SESSION_COOKIE_SECURE"]:
            response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
        return response
