"""Fuzzing the API with schemathesis: its own OpenAPI document, the test app called in-process
(WSGI), and real credentials for every security scheme the document declares.

The operations must be known when pytest collects the tests, before the session's app exists,
so the document comes from a throwaway app that never touches its database or Redis; the
requests go to the session's app (`fuzz_app`).
"""

from functools import cached_property

import pytest
import schemathesis

from app import create_app
from app.api.security import API_KEY_HEADER, API_KEY_SECURITY, JWT_SECURITY
from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import Membership
from app.services import auth
from tests.support import charges, disputes, factories, payouts
from tests.support.http import bearer, login

# Examples per operation in the fuzzing phase (the coverage phase's cases come on top). With
# 50 the whole run, 72 operations, takes about 1.5 minutes on SQLite on two busy cores.
EXAMPLES_PER_OPERATION = 50
# With deterministic generation and a fixed seed, CI sends the same requests on every run.
FUZZ_SEED = 20261125
# Far above what the fuzzer sends in a minute, so the API rate limits never answer instead of
# the route (their 429 is tested in tests/api/test_rate_limits.py).
UNREACHABLE_RATE_LIMIT = 1_000_000
OPENAPI_PATH = "/v1/openapi.json"


def openapi_document() -> dict:
    """The document the app serves; the throwaway app's database and Redis are never used."""
    spec_only = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://openapi-only.invalid/unused",
            "REDIS_URL": "redis://openapi-only.invalid:6379/0",
        }
    )
    response = spec_only.test_client().get(OPENAPI_PATH)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def load_schema():
    config = schemathesis.Config.from_dict(
        {"seed": FUZZ_SEED, "generation": {"deterministic": True, "database": "none"}}
    )
    return schemathesis.openapi.from_dict(openapi_document(), config=config)


class Credentials:
    """The credential an operation's `security` names, made on first use: the API key of a
    merchant account, a dashboard JWT of an owner, or a platform staff JWT (admin routes)."""

    def __init__(self, app, client, monkeypatch):
        self.app = app
        self.client = client
        self.monkeypatch = monkeypatch

    def headers_for(self, case) -> dict:
        security = case.operation.definition.raw.get("security")
        if security == API_KEY_SECURITY:
            return {API_KEY_HEADER: self.api_key}
        if security != JWT_SECURITY:
            return {}
        if case.operation.path.startswith("/v1/admin/"):
            return self.staff_jwt
        if case.operation.path == "/v1/auth/logout":
            return self.fresh_member_jwt()  # a logout revokes the token it is called with
        return self.member_jwt

    @cached_property
    def api_key(self) -> str:
        return factories.make_api_key(self.app, factories.make_account(self.app))

    @cached_property
    def merchant(self) -> payouts.Merchant:
        """The JWT's owner, with money available to pay out (charges without fees, released
        at once: see payouts.funded_merchant)."""
        return payouts.funded_merchant(self.app, self.client, self.monkeypatch)

    @property
    def member_jwt(self) -> dict:
        return self.merchant.headers

    @cached_property
    def staff_jwt(self) -> dict:
        return bearer(login(self.client, factories.make_staff(self.app)))

    def fresh_member_jwt(self) -> dict:
        with self.app.app_context():
            membership = db.session.scalar(
                db.select(Membership).filter_by(
                    user_id=self.merchant.member.user_id,
                    account_id=self.merchant.member.account_id,
                )
            )
            return bearer(auth.issue_token(membership).token)


class SeededIds:
    """Real ids for path parameters, each made on first use through the API, so examples get
    past the 404 of an unknown id: in the API key's account a paid test charge (also a
    transaction id), its Pix location, a dispute case on it with uploaded evidence, a webhook
    endpoint and a delivery to it; in the JWT owner's account an API key and a payout."""

    def __init__(self, credentials: Credentials):
        self.credentials = credentials
        self.client = credentials.client

    def for_parameter(self, name: str) -> str | None:
        seeded = SEEDED_PARAMETERS.get(name)
        return getattr(self, seeded) if seeded else None

    def _post(self, path: str, headers: dict, **body) -> dict:
        response = self.client.post(path, json=body, headers=headers)
        assert response.status_code in (200, 201), (path, response.get_json())
        return response.get_json()

    @cached_property
    def api_key_headers(self) -> dict:
        return {API_KEY_HEADER: self.credentials.api_key}

    @cached_property
    def paid_charge(self) -> dict:
        charge = charges.created(self.client, self.credentials.api_key)
        return self._post(f"/v1/sandbox/charges/{charge['id']}/pay", self.api_key_headers)

    @cached_property
    def charge_id(self) -> str:
        return self.paid_charge["id"]

    @cached_property
    def location_id(self) -> str:
        qr_code_url = self.paid_charge["pix"]["qr_code_url"]
        return qr_code_url.split("/v1/pix/locations/")[1].removesuffix("/qr.png")

    @cached_property
    def case_id(self) -> str:
        path = f"/v1/sandbox/charges/{self.charge_id}/dispute"
        return self._post(path, self.api_key_headers)["id"]

    @cached_property
    def evidence_id(self) -> str:
        """Uploaded but not yet confirmed: completing it is what the route does."""
        ticket = self._post(
            f"/v1/med/cases/{self.case_id}/evidence",
            self.api_key_headers,
            file_name="receipt.pdf",
            file_size=len(EVIDENCE),
            mime_type="application/pdf",
        )
        assert disputes.put_file(self.client, ticket, EVIDENCE).status_code < 300
        return ticket["id"]

    @cached_property
    def endpoint_id(self) -> str:
        body = {"url": WEBHOOK_URL, "events": [WEBHOOK_EVENT]}
        return self._post("/v1/webhooks/endpoints", self.api_key_headers, **body)["id"]

    @cached_property
    def delivery_id(self) -> str:
        """A delivery to the endpoint, of a charge created after it (never sent: no worker)."""
        assert self.endpoint_id
        charges.created(self.client, self.credentials.api_key)
        with self.credentials.app.app_context():
            webhook_jobs.relay_events()
        deliveries = self.client.get("/v1/webhooks/deliveries", headers=self.api_key_headers)
        return deliveries.get_json()["data"][0]["id"]

    @cached_property
    def payout_id(self) -> str:
        body = payouts.pix_payout()
        return self._post("/v1/withdrawals", self.credentials.member_jwt, **body)["id"]

    @cached_property
    def key_id(self) -> str:
        return self._post("/v1/api-keys", self.credentials.member_jwt, label="fuzzed")["id"]


SEEDED_PARAMETERS = {
    "charge_id": "charge_id",
    "payment_id": "charge_id",  # the payment routes take a charge's ch_ id too
    "location_id": "location_id",
    "case_id": "case_id",
    "evidence_id": "evidence_id",
    "endpoint_id": "endpoint_id",
    "delivery_id": "delivery_id",
    "withdrawal_id": "payout_id",
    "key_id": "key_id",
}
WEBHOOK_URL = "http://127.0.0.1:9/fuzzed"  # never called: no worker runs the deliveries
WEBHOOK_EVENT = "charge.created"
EVIDENCE = b"%PDF-1.4\n% fuzzing evidence\n"


@pytest.fixture
def fuzz_app(app, monkeypatch):
    """The test app with the API rate limits out of the fuzzer's reach."""
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", UNREACHABLE_RATE_LIMIT)
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE", UNREACHABLE_RATE_LIMIT)
    return app


@pytest.fixture
def fuzz_credentials(fuzz_app, client, redis, monkeypatch) -> Credentials:
    return Credentials(fuzz_app, client, monkeypatch)


@pytest.fixture
def seeded_ids(fuzz_credentials) -> SeededIds:
    return SeededIds(fuzz_credentials)
