"""A webhook receiver for trying the service on one machine: `./scripts/run` starts it and
prints its address, so a newcomer can add it as an endpoint on the dashboard's webhooks page
and watch real signed deliveries arrive (here, and in the page's delivery log).

It answers 200 to every POST and prints one line per delivery: event type, event id, the
object's id and the signature header. A legacy event (`payment.*`, `withdrawal.*`: Acme
Pay's older `{event, data}` envelope, which has no event id) shows the delivery id in its
place, and the object's status. It checks nothing: a real receiver verifies the signature
(the README's webhooks section says how).
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from app.formats.event_catalog import LEGACY_EVENTS

MAX_BODY = 1_000_000
# Where a legacy event's data names its object, by family (app/formats/webhooks.py).
LEGACY_OBJECT_ID = {"payment": "transactionId", "withdrawal": "withdrawalId"}
# The server answers each connection on its own thread, and `print` writes a line and its
# newline apart: two deliveries at once could run together and leave an empty line.
_PRINTING = threading.Lock()


class DeliveryPrinter(BaseHTTPRequestHandler):
    """Prints each delivery and says 200, so it counts as DELIVERED."""

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        body = self.rfile.read(length)
        line = describe(self.path, self.headers, body)
        with _PRINTING:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        """Quiet: `do_POST` prints the one line that matters."""


def describe(path: str, headers, body: bytes) -> str:
    """`[receiver] POST /hooks charge.paid evt_… for ch_… (X-Acme-Signature: t=…,v1=…)`, or
    for a legacy event `… payment.completed (legacy) delivery <id> for <id>: PAID (…)`."""
    event_type = headers.get("X-Acme-Event-Type") or "?"
    event = _json_object(body)
    about = _canonical(event_type, event) or _legacy(event, headers)
    if about is None:
        about = f"{event_type} (not an Acme Pay event)"
    signature = headers.get("X-Acme-Signature") or "no signature"
    return f"[receiver] POST {path} {about} (X-Acme-Signature: {signature})"


def _json_object(body: bytes) -> dict:
    """The body's JSON object, or {} for anything else."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _canonical(event_type: str, event: dict) -> str | None:
    """`charge.paid evt_… for ch_…` for an `{id, …, data: {object}}` envelope."""
    data = event.get("data")
    subject = data.get("object") if isinstance(data, dict) else None
    if not isinstance(subject, dict):
        return None
    return f"{event_type} {event.get('id', '?')} for {subject.get('id', '?')}"


def _legacy(event: dict, headers) -> str | None:
    """`payment.completed (legacy) delivery … for …: PAID` for an `{event, data}` envelope
    of a legacy event; it has no event id, so the delivery's id stands in."""
    name, data = event.get("event"), event.get("data")
    if not (isinstance(name, str) and name in LEGACY_EVENTS and isinstance(data, dict)):
        return None
    subject = data.get(LEGACY_OBJECT_ID[name.split(".")[0]], "?")
    delivery = headers.get("X-Acme-Delivery-Id") or "?"
    return f"{name} (legacy) delivery {delivery} for {subject}: {data.get('status', '?')}"


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
