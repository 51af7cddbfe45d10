"""The signed cookie session is for people in a browser. The JSON API authenticates each
request by API key or bearer token, and the health checks and metrics by nothing we keep in
a cookie, so JSON paths neither open nor save it.

Left to itself, Flask opened the session on every request, and Flask-Login's after-request
hook looked into it on every answer, so each API answer said `Vary: Cookie` (a cache would
have keyed API answers on a cookie they never read) and paid for a cookie serializer twice.
"""

from flask import Flask
from flask.sessions import SecureCookieSessionInterface

from app.errors import wants_json


class BrowserSessionInterface(SecureCookieSessionInterface):
    """The cookie session on pages; none on JSON paths (Flask's null session: empty, never
    saved, and any write to it fails loudly)."""

    def open_session(self, app, request):
        if wants_json(request.path):
            return None
        return super().open_session(app, request)


def register_cookie_sessions(app: Flask) -> None:
    app.session_interface = BrowserSessionInterface()
