"""A webhook receiver for trying the service on one machine: `./scripts/run` starts it and
prints its address, so a newcomer can add it as an endpoint on the dashboard's webhooks page
and watch real signed deliveries arrive (here, and in the page's delivery log).

It answers 200 to every POST and prints one line per delivery: event type, event id, the
object's id and the signature header. It checks nothing: a real receiver verifies the
signature (the README's webhooks section says how).
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1_000_000


class DeliveryPrinter(BaseHTTPRequestHandler):
    """Prints each delivery and says 200, so it counts as DELIVERED."""

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        body = self.rfile.read(length)
        print(describe(self.path, self.headers, body), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        """Quiet: `do_POST` prints the one line that matters."""


def describe(path: str, headers, body: bytes) -> str:
    """`[receiver] POST /hooks charge.paid evt_… for ch_… (X-Acme-Signature: t=…,v1=…)`."""
    event_type = headers.get("X-Acme-Event-Type") or "?"
    try:
        event = json.loads(body)
        about = f"{event.get('id', '?')} for {event['data']['object'].get('id', '?')}"
    except (ValueError, TypeError, KeyError, AttributeError):
        about = "(not an Acme Pay event)"
    signature = headers.get("X-Acme-Signature") or "no signature"
    return f"[receiver] POST {path} {event_type} {about} (X-Acme-Signature: {signature})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args(argv).port
    server = ThreadingHTTPServer(("127.0.0.1", port), DeliveryPrinter)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
