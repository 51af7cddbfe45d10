"""Schemathesis against the deployed stack (issue 25): every operation of the document the
web process serves, in every phase (explicit examples, coverage, fuzzing, and stateful
sequences along the document's links), valid and invalid inputs, every check, a fixed seed
and a bounded budget; real credentials and real ids come from fuzz_hooks.py.

It fuzzes two merchants of its own (made by operator commands, as the seed is), so the demo
merchant the other deployed tests use is untouched, and it removes the webhook endpoints it
registered, so the webhook workers are not left retrying them. Passing means: schemathesis
found nothing, no answer was a 5xx, no process logged a traceback, and the valid inputs made
at least one object of each kind (the counts are printed)."""

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from app.extensions import WEBHOOK_QUEUE
from app.pix import brcode
from tests.faults.processes import ROOT
from tests.support.charges import charge_body
from tests.support.deployed import RELEASE_SECONDS, DeployedStack, created
from tests.support.payments import payment_body
from tests.support.payouts import pix_payout

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")  # seed, budget, phases, checks
FUZZ_SECONDS = 1_200  # a generous bound on the whole run, never reached on a healthy stack
DRAIN_SECONDS = 600  # the deliveries still queued when it ends, at a few per second on SQLite
DEAD_ENDPOINT = "http://127.0.0.1:9/fuzzed"  # nothing listens on the discard port
OWNER_PASSWORD = "fuzzing-owner-password"
STAFF_PASSWORD = "fuzzing-staff-password"
FUNDS = 500_000
PENDING_PAYOUTS = 3
DISPUTABLE = 3  # paid charges no case names yet, for the fuzzer's sandbox disputes
EVIDENCE = b"%PDF-1.4\n% fuzzing evidence\n"
# What the run must have created through the API, by kind: the listing that shows them.
CREATED_KINDS = {
    "charges": ("apikey", "/v1/charges?limit=100"),
    "payments": ("apikey", "/v1/payments?limit=100"),
    "refunds": ("apikey", "/v1/payments/{payment_id}/refunds"),
    "dispute cases": ("apikey", "/v1/med/cases?limit=100"),
    "webhook endpoints": ("apikey", "/v1/webhooks/endpoints"),
    "api keys": ("owner", "/v1/api-keys"),
    "payouts": ("owner", "/v1/withdrawals?limit=100&mode=test"),
}


class Fuzzed:
    """The fuzzed merchants, their credentials and the ids of objects that exist."""

    def __init__(self, deployed: DeployedStack):
        self.deployed = deployed
        _, self.api_key = deployed.new_merchant("Loja sob fuzzing")
        self.owner_email = f"dona-{uuid.uuid4().hex[:8]}@loja-fuzz.example.com"
        self.funding_key = self._owner_account()
        self.owner_token = self._login(self.owner_email, OWNER_PASSWORD)
        self.staff_token = self._staff_token()
        self.ids: dict[str, str] = {}
        self.baseline = {}

    def api(self, method: str, path: str, **kwargs):
        return self.deployed.api(method, path, headers={"apikey": self.api_key}, **kwargs)

    def owner(self, method: str, path: str, **kwargs):
        headers = {"Authorization": f"Bearer {self.owner_token}"}
        return self.deployed.request(method, path, headers=headers, **kwargs)

    def _owner_account(self) -> str:
        """Account B, its owner, and a test key that funds its wallet (never fuzzed with)."""
        printed = self.deployed.run(
            "flask --app wsgi accounts create 'Saques sob fuzzing' --test-key"
        )
        made = dict(line.split("=", 1) for line in printed.split())
        self.deployed.run(
            f"flask --app wsgi users add {self.owner_email} --password {OWNER_PASSWORD}"
            f" --name Dona --account {made['account_id']} --role OWNER"
        )
        self.deployed.run(
            f"flask --app wsgi accounts set {made['account_id']} --no-auto-approve-payouts"
        )
        return made["test_api_key"]

    def _staff_token(self) -> str:
        email = f"staff-{uuid.uuid4().hex[:8]}@acmepay.example.com"
        self.deployed.run(
            f"flask --app wsgi users add {email} --password {STAFF_PASSWORD} --name Staff --staff"
        )
        return self._login(email, STAFF_PASSWORD)

    def _login(self, email: str, password: str) -> str:
        response = self.deployed.request(
            "POST", "/v1/auth/login", json={"email": email, "password": password}
        )
        assert response.status_code == 200, response.text
        return response.json()["token"]

    def seed_objects(self) -> None:
        """One object of each kind that a path can name, made through the API."""
        charge = created(self.api("POST", "/v1/charges", json=charge_body(amount=5_000)))
        self.ids["code_id"] = brcode.parse(charge["pix"]["br_code"]).location.rsplit("/", 1)[1]
        self.ids["location_id"] = charge["pix"]["qr_code_url"].split("/")[-2]
        self._pay(charge["id"])
        self.ids["charge_id"] = charge["id"]
        self.ids["disputable_charge_ids"] = [self._paid_charge() for _ in range(DISPUTABLE)]
        self.ids["case_id"] = created_or_ok(
            self.api("POST", f"/v1/sandbox/charges/{charge['id']}/dispute", json={})
        )["id"]
        self.ids["evidence_id"] = self._uploaded_evidence(self.ids["case_id"])
        payment = created(self.api("POST", "/v1/payments", json=payment_body()))
        self.ids["payment_id"] = payment["id"]
        self.deployed.wait_for(
            lambda: (
                self.api("POST", f"/v1/sandbox/payments/{payment['id']}/pay", json={}).status_code
                == 200
            ),
            RELEASE_SECONDS,
            "the payment to be finalised and paid",
        )
        refund = self.api(
            "POST",
            f"/v1/payments/{payment['id']}/refund",
            json={"amount": 100, "idempotencyKey": uuid.uuid4().hex},
        )
        self.ids["refund_id"] = created(refund)["id"]
        endpoint = {"url": DEAD_ENDPOINT, "events": ["charge.created"]}
        self.ids["endpoint_id"] = created(
            self.api("POST", "/v1/webhooks/endpoints", json=endpoint)
        )["id"]
        created(self.api("POST", "/v1/charges", json=charge_body(amount=1_000)))
        self.ids["delivery_id"] = self.deployed.wait_for(
            self._first_delivery, RELEASE_SECONDS, "a delivery to the seeded endpoint"
        )
        self._fund_owner_account()
        self.ids["key_id"] = created(self.owner("POST", "/v1/api-keys", json={}))["id"]
        payouts = [
            created(self.owner("POST", "/v1/withdrawals", json=pix_payout()))["id"]
            for _ in range(PENDING_PAYOUTS)
        ]
        self.ids["withdrawal_id"], self.ids["admin_withdrawal_id"] = payouts[0], payouts[1]
        self.baseline = self.counts()

    def _pay(self, charge_id: str) -> None:
        paid = self.api("POST", f"/v1/sandbox/charges/{charge_id}/pay", json={})
        assert paid.status_code == 200, paid.text

    def _paid_charge(self) -> str:
        charge = created(self.api("POST", "/v1/charges", json=charge_body(amount=2_000)))
        self._pay(charge["id"])
        return charge["id"]

    def _uploaded_evidence(self, case_id: str) -> str:
        ticket = created(
            self.api(
                "POST",
                f"/v1/med/cases/{case_id}/evidence",
                json={
                    "file_name": "receipt.pdf",
                    "file_size": len(EVIDENCE),
                    "mime_type": "application/pdf",
                },
            )
        )
        upload = self.deployed.request(
            "PUT",
            self.deployed.path(ticket["upload_url"]),
            data=EVIDENCE,
            headers=ticket["upload_headers"],
        )
        assert upload.status_code < 300, upload.text
        return ticket["id"]

    def _first_delivery(self) -> str | None:
        page = self.api("GET", "/v1/webhooks/deliveries").json()
        return page["data"][0]["id"] if page["data"] else None

    def _fund_owner_account(self) -> None:
        headers = {"apikey": self.funding_key}
        body = charge_body(amount=FUNDS)
        charge = created(self.deployed.api("POST", "/v1/charges", json=body, headers=headers))
        paid = self.deployed.api(
            "POST", f"/v1/sandbox/charges/{charge['id']}/pay", json={}, headers=headers
        )
        assert paid.status_code == 200, paid.text

        def available() -> bool:
            balance = self.deployed.api("GET", "/v1/wallets/balance", headers=headers).json()
            return balance["pending"] == 0 and balance["available"] > 0

        self.deployed.wait_for(available, RELEASE_SECONDS, "the owner's funds to be released")

    def counts(self) -> dict[str, int]:
        """How many objects of each kind the two accounts hold."""
        return {
            kind: self._count(who, path.format(**self.ids))
            for kind, (who, path) in CREATED_KINDS.items()
        }

    def _count(self, who: str, path: str) -> int:
        """A listing's total, its pages followed where it gives no total."""
        call = self.api if who == "apikey" else self.owner
        counted, cursor = 0, ""
        while True:
            response = call("GET", path + cursor)
            assert response.status_code == 200, response.text
            page = response.json()
            if "total" in page:
                return page["total"]
            counted += len(page["data"])
            if not page.get("has_more"):
                return counted
            cursor = f"&starting_after={page['data'][-1]['id']}"

    def context(self) -> dict:
        return {
            "base": self.deployed.base,
            "api_key": self.api_key,
            "owner": {"email": self.owner_email, "password": OWNER_PASSWORD},
            "owner_token": self.owner_token,
            "staff_token": self.staff_token,
            "ids": self.ids,
        }

    def remove_endpoints(self) -> None:
        """Delete every endpoint the fuzzer registered: their deliveries are cancelled."""
        for endpoint in self.api("GET", "/v1/webhooks/endpoints").json()["data"]:
            self.api("DELETE", f"/v1/webhooks/endpoints/{endpoint['id']}")


def created_or_ok(response) -> dict:
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_the_deployed_stack_answers_every_fuzzed_request_as_documented(deployed, tmp_path, capsys):
    fuzzed = Fuzzed(deployed)
    fuzzed.seed_objects()
    context_path = tmp_path / "fuzz-context.json"
    context_path.write_text(json.dumps(fuzzed.context()))
    logs_before = {name: len(deployed.log(name)) for name in deployed.log_paths}
    try:
        run = _schemathesis(deployed, context_path, tmp_path)
        made = {kind: count - fuzzed.baseline[kind] for kind, count in fuzzed.counts().items()}
    finally:
        fuzzed.remove_endpoints()
        # The deliveries queued for them still run (as no-ops): let the webhook workers finish
        # them, so the next test's delivery does not wait behind the fuzzer's.
        deployed.wait_for(
            lambda: deployed.queued(WEBHOOK_QUEUE) == 0,
            DRAIN_SECONDS,
            "the webhook queue to drain after fuzzing",
        )
    with capsys.disabled():  # in the test output whether it passes or not
        print(f"\nSchemathesis on the deployed stack:\n{run.stdout[-3_000:]}")
        print("Objects the fuzzer's valid requests created, by kind:", made)

    assert run.returncode == 0, (run.stdout + run.stderr)[-20_000:]
    new_logs = {name: deployed.log(name)[start:] for name, start in logs_before.items()}
    for name, text in new_logs.items():
        assert "Traceback" not in text, f"{name} logged a traceback:\n{text[-20_000:]}"
    assert not re.search(r'"status": 5\d\d', new_logs["web"]), "a 5xx in the web log"
    assert all(count > 0 for count in made.values()), made


def _schemathesis(deployed: DeployedStack, context_path: Path, directory: Path):
    """Schemathesis as its CLI runs, configured by CONFIG, in a directory of the test's own
    (it keeps a cache in the working directory)."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(CONFIG),
        "--no-color",
        "run",
        f"{deployed.base}/v1/openapi.json",
        "--report",
        "junit",
        "--report-dir",
        str(directory),
    ]
    environment = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "FUZZ_CONTEXT": str(context_path),
    }
    return subprocess.run(
        command,
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS,
    )
