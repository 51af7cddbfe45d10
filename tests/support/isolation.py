"""Every operation of the OpenAPI document whose path names an object, as data, for the
cross-account isolation matrix: the victim account's object each path parameter names, the
request that would act on it, the routes that are not account-scoped on purpose, and what
"nothing changed" is read from (every table's rows and the job queues)."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from app.extensions import QUEUE_NAMES, db, get_queue
from app.models import KeyMode, Role
from app.services.webhooks import endpoints as webhook_endpoints
from tests.support import factories
from tests.support.dashboard_routes import HOOK_URL, PDF, Shop, changed_tables, database_rows
from tests.support.http import bearer, login

OPENAPI = "/v1/openapi.json"
HTTP_METHODS = frozenset({"get", "put", "post", "patch", "delete"})
IDEMPOTENCY_HEADER = "Idempotency-Key"
DISPUTE_PREFIXES = ("/v1/med/cases", "/v1/infractions", "/v1/infractions/cases")


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    parameters: frozenset[str]
    security: str | None  # "apikey", "jwt", or None for a public route
    required_headers: frozenset[str]

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Request:
    """The path values naming the victim's objects and the body that would act on them."""

    values: dict[str, str]
    json: dict | None = None


@dataclass(frozen=True)
class Credentials:
    """How one account's caller signs requests: an API key (of one mode) and a dashboard JWT."""

    api_key: str
    jwt_headers: dict

    def headers(self, operation: Operation) -> dict:
        if operation.security == "jwt":
            return dict(self.jwt_headers)
        return {"apikey": self.api_key}


def documented_operations(spec: dict) -> list[Operation]:
    """The operations of the OpenAPI document with at least one path parameter, in path order."""
    operations = []
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            parameters = shared + operation.get("parameters", [])
            in_path = frozenset(p["name"] for p in parameters if p["in"] == "path")
            if not in_path:
                continue
            schemes = [
                name for requirement in operation.get("security", []) for name in requirement
            ]
            operations.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    parameters=in_path,
                    security=schemes[0] if schemes else None,
                    required_headers=frozenset(
                        p["name"] for p in parameters if p["in"] == "header" and p.get("required")
                    ),
                )
            )
    return sorted(operations, key=lambda operation: (operation.path, operation.method))


class Victim(Shop):
    """Account B: a funded test merchant holding, made on first need, one object of every
    kind a path names, plus an OWNER's JWT and a live-mode key of its own."""

    def credentials(self, mode: KeyMode = KeyMode.TEST) -> Credentials:
        api_key = (
            self.merchant.api_key
            if mode is KeyMode.TEST
            else factories.make_api_key(self.app, self.account_id, KeyMode.LIVE)
        )
        jwt_headers = bearer(login(self.api, self.member(Role.OWNER)))
        return Credentials(api_key, jwt_headers)

    @cached_property
    def announced_payment(self) -> str:
        """The paid charge, with an endpoint listening for its status so a resend sends (at a
        URL of its own: `endpoint_id`'s may be registered already, and a URL has one endpoint)."""
        with self.app.app_context():
            webhook_endpoints.create_endpoint(
                self.account_id, KeyMode.TEST, f"{HOOK_URL}/payments", ["payment.completed"]
            )
            db.session.commit()
        return self.paid_charge


def stranger(app) -> Credentials:
    """Account A: an OWNER with a test-mode key, who owns nothing B has."""
    member = factories.make_member(app)
    api_key = factories.make_api_key(app, member.account_id)
    return Credentials(api_key, bearer(login(app.test_client(), member)))


def _dispute_targets(prefix: str) -> dict[tuple[str, str], Callable[[Victim], Request]]:
    case = f"{prefix}/{{case_id}}"
    return {
        ("GET", case): lambda b: Request({"case_id": b.open_case}),
        ("POST", f"{case}/appeal"): lambda b: Request(
            {"case_id": b.open_case}, {"reason": "Produto entregue ao cliente."}
        ),
        ("POST", f"{case}/accept"): lambda b: Request({"case_id": b.open_case}),
        ("GET", f"{case}/evidence"): lambda b: Request({"case_id": b.open_case}),
        ("POST", f"{case}/evidence"): lambda b: Request(
            {"case_id": b.open_case},
            {"file_name": "receipt.pdf", "file_size": len(PDF), "mime_type": "application/pdf"},
        ),
        ("POST", f"{case}/evidence/{{evidence_id}}/complete"): lambda b: Request(
            {"case_id": b.open_case, "evidence_id": b.uploaded_evidence}
        ),
    }


# (method, path template) → the victim's objects and a request that would act on them: each
# object is in the state where the owner's own call succeeds, so the stranger's 404 is about
# whose object it is, never about its state or the body.
TARGETS: dict[tuple[str, str], Callable[[Victim], Request]] = {
    ("POST", "/v1/api-keys/{key_id}/rotate"): lambda b: Request({"key_id": b.key_id}, {}),
    ("DELETE", "/v1/api-keys/{key_id}"): lambda b: Request({"key_id": b.key_id}),
    ("GET", "/v1/charges/{charge_id}"): lambda b: Request({"charge_id": b.waiting_charge}),
    ("POST", "/v1/sandbox/charges/{charge_id}/pay"): lambda b: Request(
        {"charge_id": b.waiting_charge}, {}
    ),
    ("GET", "/v1/payments/{payment_id}"): lambda b: Request({"payment_id": b.paid_charge}),
    ("POST", "/v1/payments/{payment_id}/cancel"): lambda b: Request(
        {"payment_id": b.waiting_charge}
    ),
    ("POST", "/v1/payments/{payment_id}/refund"): lambda b: Request(
        {"payment_id": b.paid_charge}, {"idempotencyKey": uuid.uuid4().hex}
    ),
    ("GET", "/v1/payments/{payment_id}/refunds"): lambda b: Request({"payment_id": b.paid_charge}),
    ("POST", "/v1/payments/{payment_id}/refunds/{refund_id}/cancel"): lambda b: Request(
        {"payment_id": b.waiting_refund.payment_id, "refund_id": b.waiting_refund.id}
    ),
    ("POST", "/v1/payments/{payment_id}/resend-webhook"): lambda b: Request(
        {"payment_id": b.announced_payment}
    ),
    ("GET", "/v1/payments/{payment_id}/provider-status"): lambda b: Request(
        {"payment_id": b.paid_charge}
    ),
    ("GET", "/v1/payments/{payment_id}/receipt"): lambda b: Request({"payment_id": b.paid_charge}),
    ("POST", "/v1/sandbox/payments/{payment_id}/pay"): lambda b: Request(
        {"payment_id": b.waiting_charge}, {}
    ),
    ("GET", "/v1/withdrawals/{withdrawal_id}"): lambda b: Request(
        {"withdrawal_id": b.pending_payout}
    ),
    ("POST", "/v1/withdrawals/{withdrawal_id}/cancel"): lambda b: Request(
        {"withdrawal_id": b.pending_payout}
    ),
    ("PATCH", "/v1/webhooks/endpoints/{endpoint_id}"): lambda b: Request(
        {"endpoint_id": b.endpoint_id},
        {"url": "http://localhost:9000/moved", "events": ["charge.paid"], "status": "INACTIVE"},
    ),
    ("DELETE", "/v1/webhooks/endpoints/{endpoint_id}"): lambda b: Request(
        {"endpoint_id": b.endpoint_id}
    ),
    ("POST", "/v1/webhooks/endpoints/{endpoint_id}/rotate-secret"): lambda b: Request(
        {"endpoint_id": b.endpoint_id}, {}
    ),
    ("POST", "/v1/webhooks/endpoints/{endpoint_id}/recover"): lambda b: Request(
        {"endpoint_id": b.failed_delivery.endpoint_id}, {"since": "2020-01-01T00:00:00Z"}
    ),
    ("POST", "/v1/webhooks/deliveries/{delivery_id}/retry"): lambda b: Request(
        {"delivery_id": b.failed_delivery.id}
    ),
    **{
        target: request
        for prefix in DISPUTE_PREFIXES
        for target, request in _dispute_targets(prefix).items()
    },
    ("POST", "/v1/sandbox/charges/{charge_id}/dispute"): lambda b: Request(
        {"charge_id": b.paid_charge}, {}
    ),
    ("POST", "/v1/sandbox/med/cases/{case_id}/request-evidence"): lambda b: Request(
        {"case_id": b.open_case}
    ),
    ("POST", "/v1/sandbox/med/cases/{case_id}/decision"): lambda b: Request(
        {"case_id": b.open_case}, {"decision": "refunded_to_merchant"}
    ),
}

# Operations whose path parameter names no account's object on purpose, and why.
NOT_ACCOUNT_SCOPED: dict[tuple[str, str], str] = {
    ("GET", "/v1/pix/locations/{location_id}"): "public BR Code payload read by payers' banks; "
    "the unguessable location id is the credential (tests/api/charges/test_charges.py)",
    ("GET", "/v1/pix/locations/{location_id}/qr.png"): "public QR image of the same location",
    ("GET", "/v1/qr/{code_id}"): "the same public payload at the compact location of newer codes",
    ("POST", "/v1/admin/withdrawals/{withdrawal_id}/approve"): "platform staff act on every "
    "account's payouts; a merchant's token gets 403 (tests/api/payouts/test_withdrawals.py)",
    ("POST", "/v1/admin/withdrawals/{withdrawal_id}/reject"): "platform staff, as approve",
    ("POST", "/v1/api-pix/webhook/{secret}/pix"): "the PSP's inbound webhook: the path secret "
    "is the credential, no account calls it (tests/providers/api_pix/test_inbound.py)",
}


def send(client, operation: Operation, request: Request, credentials: Credentials):
    """Call `operation` on the request's objects as `credentials`' account would, with a fresh
    Idempotency-Key when the document requires one."""
    headers = credentials.headers(operation)
    if IDEMPOTENCY_HEADER in operation.required_headers:
        headers[IDEMPOTENCY_HEADER] = uuid.uuid4().hex
    return client.open(
        operation.path.format(**request.values),
        method=operation.method,
        json=request.json,
        headers=headers,
    )


def warm_up(client, credentials: Credentials) -> None:
    """Use both credentials once, so the key's last-use stamp is written before a snapshot."""
    assert client.get("/v1/wallets", headers={"apikey": credentials.api_key}).status_code == 200
    assert client.get("/v1/api-keys", headers=credentials.jwt_headers).status_code == 200


def state(app) -> dict:
    """Every row of every table and every queue's jobs: what a refused call must not touch."""
    with app.app_context():
        queued = {name: get_queue(name).job_ids for name in QUEUE_NAMES}
    return {"rows": database_rows(app), "queued": queued}


def differences(before: dict, after: dict) -> list[str]:
    """The tables and queues whose contents differ between two readings of `state`."""
    queues = [name for name in after["queued"] if before["queued"][name] != after["queued"][name]]
    return changed_tables(before["rows"], after["rows"]) + [f"queue {name}" for name in queues]
