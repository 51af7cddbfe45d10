"""Schemathesis hooks for fuzzing the deployed stack (tests/deployed/test_fuzz.py; named by
tests/deployed/schemathesis.toml): the credential each operation's `security` names, real ids
and real values, read from the JSON file FUZZ_CONTEXT names.

- `apikey` operations get the test key of the fuzzed merchant (account A: charges, payments,
  cases, endpoints).
- `jwt` operations get the token of account B's owner (keys, payouts), whose account is not
  A, so a key the fuzzer revokes or rotates is never the one it fuzzes with; `/v1/admin/*`
  get a staff token; a logout gets a token signed in for it alone (it revokes the token it
  is called with).
- Generated cases other than the stateful phase's (which follows the document's links) have
  their path ids replaced by ids of objects that exist, so examples get past the 404 of an
  unknown id.
- Valid (positive) cases get real values where the document can only name a rule a pattern
  cannot hold: check digits of a CPF or CNPJ, a Pix key of its stated type, the endpoint id a
  rotation body repeats, a cursor naming an object of the list, and a payout paid by Pix from
  the funded test wallet (the type decides which destination fields apply), MB WAY's phone,
  and metadata without U+0000; a charge's due date with terms that hold together (from today,
  with its payer named) and a location's intended payment day from today. Invalid (negative)
  cases keep what was generated.
"""

import json
import os
from datetime import datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import requests
import schemathesis
from schemathesis import GenerationMode

from app.api.security import API_KEY_HEADER, API_KEY_SECURITY, JWT_SECURITY

REQUEST_SECONDS = 10
ADMIN_PREFIX = "/v1/admin/"
LOGOUT_PATH = "/v1/auth/logout"
ROTATE_SECRET = "/{endpoint_id}/rotate-secret"
PAYOUTS = "/v1/withdrawals"
SANDBOX_DISPUTE = "/v1/sandbox/charges/{charge_id}/dispute"
SMALLEST_PAYOUT, LARGEST_PAYOUT = 200, 1_000
LARGEST_DUE_AMOUNT = 100_000_000_00  # R$ 100 milhões: fine and interest stay within a Pix
MBWAY_PHONE = "+351912345678"
CPF = "529.982.247-25"
EVP = "123e4567-e89b-42d3-a456-426614174000"
# Fields holding a CPF or CNPJ, whose check digits the document can only describe.
TAX_ID_FIELDS = {
    "document",
    "customerDocument",
    "expected_payer_tax_id",
    "holderDocument",
    "payer_document",
}


@cache
def context() -> dict:
    with open(os.environ["FUZZ_CONTEXT"]) as file:
        return json.load(file)


def _fresh_owner_token() -> str:
    owner = context()["owner"]
    response = requests.post(
        context()["base"] + "/v1/auth/login",
        json={"email": owner["email"], "password": owner["password"]},
        timeout=REQUEST_SECONDS,
    )
    response.raise_for_status()
    return response.json()["token"]


@schemathesis.auth()
class Credentials:
    """One provider for every scheme: it picks the credential by the operation's security."""

    def get(self, case, ctx):
        return context()

    def set(self, case, data, ctx):
        security = case.operation.definition.raw.get("security")
        case.headers = dict(case.headers or {})
        if security == API_KEY_SECURITY:
            case.headers[API_KEY_HEADER] = data["api_key"]
        elif security == JWT_SECURITY:
            case.headers["Authorization"] = f"Bearer {self._token(case.operation.path, data)}"

    @staticmethod
    def _token(path: str, data: dict) -> str:
        if path.startswith(ADMIN_PREFIX):
            return data["staff_token"]
        if path == LOGOUT_PATH:
            return _fresh_owner_token()
        return data["owner_token"]


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Every phase's cases pass here just before they are sent (explicit examples too, which
    `map_case` never sees)."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return
    if meta.phase.name.value != "stateful":  # that phase takes ids along the links
        _use_real_ids(case)
    if isinstance(case.body, dict):
        _use_real_values(case.operation.path, case.body, case.path_parameters or {})
    if case.query:
        _use_real_query(case.operation.path, case.query)


def _use_real_ids(case) -> None:
    ids = context()["ids"]
    admin = case.operation.path.startswith(ADMIN_PREFIX)
    for name in case.path_parameters or {}:
        real = ids.get(f"admin_{name}" if admin else name)
        if real:
            case.path_parameters[name] = real
    if case.operation.path == SANDBOX_DISPUTE:
        # a paid charge no case names yet, while they last: a dispute opens a new case
        case.path_parameters["charge_id"] = next(_disputable(), ids["charge_id"])


@cache
def _disputable():
    return iter(context()["ids"]["disputable_charge_ids"])


def _without_nul(value):
    """Metadata as stored: PostgreSQL text holds no U+0000, so no request may carry one (the
    document says so of metadata, whose keys and values it leaves free)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def _use_real_query(path: str, query: dict) -> None:
    if "starting_after" in query:
        # a cursor names an object of the list's own account
        query["starting_after"] = context()["ids"][
            "charge_id" if path == "/v1/charges" else "case_id"
        ]
    if "customer_id" in query:
        query["customer_id"] = CPF
    if "DPP" in query:
        query["DPP"] = _sao_paulo_today().isoformat()  # a payer pays from today on
    if "startDate" in query and "endDate" in query:
        query["endDate"] = query["startDate"]  # a period ends after it starts


def _use_real_tax_ids(body: dict) -> None:
    for name, value in body.items():
        if name in TAX_ID_FIELDS and isinstance(value, str):
            body[name] = CPF
        elif isinstance(value, dict):
            _use_real_tax_ids(value)


def _use_real_values(path: str, body: dict, path_parameters: dict) -> None:
    _use_real_tax_ids(body)
    if "destinationKey" in body:
        body["destinationKey"] = EVP
    if body.get("expected_payer_tax_id"):
        # the locked payer is named: the customer's name comes with the document
        body["customer"] = {**(body.get("customer") or {}), "name": "Ana Souza"}
    if isinstance(body.get("due"), dict):
        # terms whose values hold together (dates from today, parts below the amount, a late
        # total a Pix can carry), and the payer the standard requires; no expiry applies
        body["due"] = _real_due()
        if isinstance(body.get("amount"), int):
            body["amount"] = min(body["amount"], LARGEST_DUE_AMOUNT)
        body["customer"] = {**(body.get("customer") or {}), "name": "Ana Souza", "document": CPF}
        body.pop("expires_in", None)
    body.pop("webhookUrl", None)  # must name an endpoint the account registered
    if "MBWAY" in (body.get("paymentMethods") or []):
        # MB WAY asks the payer's phone for the push, in metadata.phone
        body["metadata"] = {**(body.get("metadata") or {}), "phone": MBWAY_PHONE}
    if isinstance(body.get("metadata"), dict):
        body["metadata"] = _without_nul(body["metadata"])
    if path.endswith(ROTATE_SECRET) and "id" in body:
        body["id"] = path_parameters["endpoint_id"]
    if path == PAYOUTS:
        for field in ("bankAccount", "cryptoAddress", "cryptoNetwork", "cryptoCurrency"):
            body.pop(field, None)
        body.update(type="PIX", currency="BRL", test=True, pixKeyType="EVP", pixKey=EVP)
        if isinstance(body.get("amount"), int):
            # above the Pix payout fee, within the funded balance
            body["amount"] = min(max(body["amount"], SMALLEST_PAYOUT), LARGEST_PAYOUT)


def _sao_paulo_today():
    return datetime.now(ZoneInfo("America/Sao_Paulo")).date()


def _real_due() -> dict:
    due_date = _sao_paulo_today() + timedelta(days=10)
    return {
        "date": due_date.isoformat(),
        "days_valid_after": 5,
        "fine": {"type": "percent", "value": 2},
        "interest": {"type": "percent_month", "value": 1},
        "discounts": [{"until": due_date.isoformat(), "type": "percent", "value": 1}],
    }
