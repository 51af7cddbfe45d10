"""No secret, credential or document reaches the logs (issue 10): a whole merchant flow runs
with every logger at DEBUG, formatted as production formats it, and none of what the flow
handled appears in the output: password, JWT, API key, webhook secret and signature, signed
storage addresses, the evidence file's bytes, or the customer's CPF."""

import io
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.logs import JsonFormatter
from app.models import Role, WebhookDelivery
from tests.support import charges, factories
from tests.support import disputes as d
from tests.support.http import bearer, login
from tests.support.refunds import Merchant, merchant, release

CPF_DIGITS = "52998224725"
CPF_FORMATTED = "529.982.247-25"
DOCUMENT_MARKER = "Nota fiscal 7731 confidencial"
DOCUMENT = b"%PDF-1.7\n" + DOCUMENT_MARKER.encode() + b"\n%%EOF"


@pytest.fixture
def log_output():
    """Everything logged during the test, as JSON lines, at DEBUG and above."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    previous_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(previous_level)


def _signature(url: str) -> str:
    return parse_qs(urlsplit(url).query)["signature"][0]


def _deliver_everything(app) -> None:
    with app.app_context():
        webhook_jobs.relay_events()
        for delivery_id in db.session.scalars(sa.select(WebhookDelivery.id)).all():
            webhook_jobs.deliver(delivery_id)


def test_a_merchant_flow_leaves_no_secret_or_document_in_the_logs(
    app, client, receiver, tmp_path, monkeypatch, log_output
):
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(tmp_path))
    account = merchant(app, monkeypatch)
    owner = factories.make_member(app, account.account_id, Role.OWNER)

    refused = client.post(
        "/v1/auth/login", json={"email": owner.email, "password": "wrong-password-123"}
    )
    assert refused.status_code == 401
    token = login(client, owner)
    issued = client.post(
        "/v1/api-keys", headers=bearer(token), json={"label": "shop", "test": True}
    ).json
    shop = Merchant(account_id=account.account_id, api_key=issued["apiKey"])
    endpoint = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": ["charge.created", "charge.paid"]},
        headers={"apikey": shop.api_key},
    ).get_json()

    charge = charges.created(
        client,
        shop.api_key,
        customer={"name": "Ana Souza", "document": CPF_FORMATTED, "email": "ana@example.com"},
        expected_payer_tax_id=CPF_DIGITS,
    )
    assert charges.pay(client, shop.api_key, charge["id"]).status_code == 200
    release(app)
    _deliver_everything(app)
    case = d.opened(client, shop, charge["id"])
    ticket = d.ticket(client, shop.api_key, case["id"], DOCUMENT).get_json()
    assert d.put_file(client, ticket, DOCUMENT).status_code == 200
    evidence = d.complete(client, shop.api_key, case["id"], ticket["id"]).get_json()
    view = urlsplit(evidence["view_url"])
    assert client.get(f"{view.path}?{view.query}").data == DOCUMENT
    assert client.post("/v1/auth/logout", headers=bearer(token)).status_code in (200, 204)

    output = log_output.getvalue()
    assert '"logger": "acme.request"' in output  # the capture saw the request log
    assert len(receiver.received) >= 2  # webhooks were signed and sent
    secrets = {
        "password": owner.password,
        "wrong password": "wrong-password-123",
        "JWT": token,
        "API key": shop.api_key,
        "webhook secret": endpoint["secret"],
        "upload signature": _signature(ticket["upload_url"]),
        "view signature": _signature(evidence["view_url"]),
        "document": DOCUMENT_MARKER,
        "CPF": CPF_DIGITS,
        "formatted CPF": CPF_FORMATTED,
        "SECRET_KEY": app.config["SECRET_KEY"],
        "JWT_SECRET": app.config["JWT_SECRET"],
    }
    for request in receiver.received:
        signature_header = request.headers["X-Acme-Signature"]
        secrets[f"webhook signature {signature_header[:12]}"] = signature_header.split("=")[-1]
    leaked = [name for name, value in secrets.items() if value in output]
    assert leaked == [], leaked
