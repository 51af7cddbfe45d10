"""The OpenAPI document states every limit and format the service enforces, so a client (or a
fuzzer) that keeps to the document is answered, and what the service refuses the document
refuses too.

"The document allows" is decided the way a client decides it: the published schema through a
JSON Schema validator whose patterns follow ECMA-262 (`jsonschema_rs`: its `$` does not match
before a final newline, Python's does). Query integers and strings are walked from the served
document, so a new one is checked without touching this file.
"""

import re
import unicodedata
import uuid

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema_rs import Draft4Validator

from app.api.schemas.charges import CHARGE_ID
from app.api.schemas.disputes import CASE_ID, CHARGE_FILTER
from app.api.schemas.fields import EMAIL, NUL_FREE, TAX_ID
from app.api.schemas.webhooks import ENDPOINT_URL
from app.api.security import API_KEY_HEADER
from app.formats.event_catalog import SUBSCRIBABLE
from app.models import KeyMode
from app.models.base import MAX_PAGE_OR_OFFSET
from app.services.disputes.evidence import HIDDEN_CATEGORIES
from app.services.transactions.charges import MAX_AMOUNT, MIN_EXPIRES_IN
from tests.support import charges, factories, payments
from tests.support.charges import ALPHANUMERIC_CNPJ, CNPJ, CPF
from tests.support.http import assert_error
from tests.support.patterns import texts_matching

NUL_SAMPLES = 10  # texts per published pattern checked for U+0000
DOCUMENT = "/v1/openapi.json"
ENDPOINTS = "/v1/webhooks/endpoints"
CASE_LISTS = ("/v1/med/cases", "/v1/infractions", "/v1/infractions/cases")
BEYOND_ANY_DATABASE = str(2**63 - 1)  # the page that made GET /v1/withdrawals a 500
NOT_ASCII_DIGITS = ["\u0663", "\uff11", "+1", "-1", " 1", "1 ", "1_0", "", "1.0", "0x1", "1e3"]


def range_message(minimum: int, maximum: int) -> str:
    return f"Must be greater than or equal to {minimum} and less than or equal to {maximum}."


@pytest.fixture
def document(client) -> dict:
    response = client.get(DOCUMENT)
    assert response.status_code == 200
    return response.get_json()


@pytest.fixture
def api_key(app, owner) -> str:
    return factories.make_api_key(app, owner.account_id)


@pytest.fixture
def api_key_headers(api_key) -> dict:
    return {API_KEY_HEADER: api_key}


@pytest.fixture
def credentials(api_key_headers, owner_headers) -> dict[str, dict]:
    """Headers for each security scheme the document names, all of the same account."""
    return {"apikey": api_key_headers, "jwt": owner_headers}


def resolved(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def body_property(document: dict, method: str, path: str, *names: str) -> dict:
    """The published schema of a request body's property (`names` walk nested objects)."""
    schema = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    schema = schema["schema"]
    for name in names:
        schema = resolved(document, resolved(document, schema)["properties"][name])
    return schema


def query_parameter(document: dict, path: str, name: str) -> dict:
    """A query parameter's schema, with the parameter's description."""
    parameters = document["paths"][path]["get"]["parameters"]
    found = next(p for p in parameters if p["in"] == "query" and p["name"] == name)
    return {**found["schema"], "description": found.get("description", "")}


def allows(schema: dict, value) -> bool:
    return Draft4Validator(schema, validate_formats=True).is_valid(value)


def operations(document: dict):
    """(path, method, operation) of every operation (a path's shared `parameters` aside)."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation


def query_integers(document: dict) -> list[tuple[str, str, dict, str]]:
    """(path, name, schema, security scheme) of every integer query parameter."""
    found = []
    for path, _, operation in operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and parameter["schema"]["type"] == "integer":
                scheme = next(iter(operation["security"][0]))
                found.append((path, parameter["name"], parameter["schema"], scheme))
    return found


def refused(response, param: str, message: str | None = None) -> None:
    error = assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)
    if message is not None:
        assert {"param": param, "message": message} in error["details"], error


def matches(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, text) is not None


# Query integers


def test_every_query_integer_states_both_bounds(document):
    integers = query_integers(document)
    assert len(integers) >= 9, integers
    unbounded = [
        (path, name)
        for path, name, schema, _ in integers
        if not {"minimum", "maximum"} <= set(schema)
    ]
    assert not unbounded


def test_each_query_integer_takes_its_documented_bounds_and_refuses_one_past_them(
    client, document, credentials
):
    for path, name, schema, scheme in query_integers(document):
        minimum, maximum = schema["minimum"], schema["maximum"]
        headers = credentials[scheme]
        for value in (minimum, maximum):
            response = client.get(path, query_string={name: str(value)}, headers=headers)
            assert response.status_code == 200, (path, name, value, response.get_json())
        over = client.get(path, query_string={name: str(maximum + 1)}, headers=headers)
        refused(over, name, range_message(minimum, maximum))
        under = client.get(path, query_string={name: str(minimum - 1)}, headers=headers)
        refused(under, name, range_message(minimum, maximum) if minimum > 0 else None)


@pytest.mark.parametrize(
    ("path", "name"),
    [("/v1/withdrawals", "page"), ("/v1/payments", "page"), ("/v1/webhooks/deliveries", "offset")],
)
@pytest.mark.parametrize("value", [BEYOND_ANY_DATABASE, "9" * 5000])
def test_a_page_or_offset_beyond_what_the_database_takes_is_a_400_not_a_500(
    client, credentials, document, path, name, value
):
    scheme = next(iter(document["paths"][path]["get"]["security"][0]))
    response = client.get(path, query_string={name: value}, headers=credentials[scheme])
    minimum = 0 if name == "offset" else 1
    refused(response, name, range_message(minimum, MAX_PAGE_OR_OFFSET))


def test_the_last_page_is_documented_and_answered(client, owner_headers, api_key_headers, document):
    assert query_parameter(document, "/v1/withdrawals", "page")["maximum"] == MAX_PAGE_OR_OFFSET
    last = {"page": str(MAX_PAGE_OR_OFFSET), "limit": "100"}
    for path, headers in (("/v1/withdrawals", owner_headers), ("/v1/payments", api_key_headers)):
        response = client.get(path, query_string=last, headers=headers)
        assert response.status_code == 200, response.get_json()
        assert response.json["data"] == []


def test_a_ten_digit_page_parses(client, api_key_headers):
    """Nine digits were the limit, so a page the document allowed was "Not a valid integer"."""
    response = client.get("/v1/payments?page=1000000000", headers=api_key_headers)
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize("value", NOT_ASCII_DIGITS)
def test_a_query_integer_is_ascii_digits_only(client, api_key_headers, value):
    response = client.get("/v1/payments", query_string={"page": value}, headers=api_key_headers)
    refused(response, "page", "Not a valid integer.")


# Text: no NUL


def string_schemas(document: dict):
    """(where, schema) of every string a client sends: query parameters and request bodies,
    nested objects and array items included."""

    def walk(schema: dict, where: str, seen: frozenset):
        ref = schema.get("$ref")
        if ref is not None:
            if ref in seen:
                return  # a schema nested in itself
            seen = seen | {ref}
        schema = resolved(document, schema)
        if schema.get("type") == "string":
            yield where, schema
        for name, child in schema.get("properties", {}).items():
            yield from walk(child, f"{where}.{name}", seen)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                yield from walk(schema[key], f"{where}[{key}]", seen)

    for path, method, operation in operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                where = f"{method.upper()} {path} ?{parameter['name']}"
                yield from walk(parameter["schema"], where, frozenset())
        for media in operation.get("requestBody", {}).get("content", {}).values():
            yield from walk(media["schema"], f"{method.upper()} {path}", frozenset())


def test_every_string_a_client_sends_is_documented_without_nul(document):
    """PostgreSQL cannot store U+0000, so the service refuses it in every request; every string
    in the document says so by an enum, a date-time format, or a pattern that refuses it."""
    unstated, nul_allowed = [], []
    for where, schema in string_schemas(document):
        if "enum" in schema:
            assert not any("\x00" in (value or "") for value in schema["enum"]), where
        elif "pattern" in schema:
            for text in texts_matching(schema["pattern"], NUL_SAMPLES):
                middle = len(text) // 2
                spoiled = ["\x00" + text, text + "\x00", text[:middle] + "\x00" + text[middle:]]
                if any(matches(schema["pattern"], bad) for bad in spoiled):
                    nul_allowed.append(where)
                    break
        elif schema.get("format") != "date-time":
            unstated.append(where)
    assert not unstated, unstated
    assert not nul_allowed, nul_allowed


def test_free_text_publishes_the_nul_rule_and_the_service_agrees(
    client, api_key, api_key_headers, document
):
    description = body_property(document, "post", "/v1/charges", "description")
    assert description["pattern"] == NUL_FREE
    assert not allows(description, "Pedido\x0042")
    refused_body = charges.create(client, api_key, description="Pedido\x0042")
    assert_error(refused_body, 400, "invalid_request_error", "invalid_request")
    accepted = charges.create(client, api_key, description="Pedido 42 \u2615 \U0001d11e \t\x01")
    assert accepted.status_code == 201, accepted.get_json()
    refused_query = client.get("/v1/webhooks/deliveries?endpointId=a%00b", headers=api_key_headers)
    assert_error(refused_query, 400, "invalid_request_error", "invalid_request")


# Cursors and id filters


@pytest.fixture
def case(client, api_key) -> dict:
    """A dispute case on a paid charge of the account."""
    charge = charges.created(client, api_key)
    assert charges.pay(client, api_key, charge["id"]).status_code == 200
    response = client.post(
        f"/v1/sandbox/charges/{charge['id']}/dispute", headers={API_KEY_HEADER: api_key}
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def malformed_cursors(prefix: str) -> list[str]:
    raw = str(uuid.uuid4())
    other = "med_" if prefix == "ch_" else "ch_"
    return ["", prefix, f"{prefix}x", raw, other + raw, prefix + raw.upper(), f"{prefix}{raw}\n"]


def test_a_charge_cursor_is_documented_and_the_service_agrees(
    client, api_key, api_key_headers, document
):
    schema = query_parameter(document, "/v1/charges", "starting_after")
    assert schema["pattern"] == CHARGE_ID
    own = charges.created(client, api_key)["id"]
    assert allows(schema, own)
    page = client.get("/v1/charges", query_string={"starting_after": own}, headers=api_key_headers)
    assert page.status_code == 200, page.get_json()
    for cursor in malformed_cursors("ch_"):
        assert not allows(schema, cursor), cursor
        response = client.get(
            "/v1/charges", query_string={"starting_after": cursor}, headers=api_key_headers
        )
        refused(response, "starting_after")


def test_a_case_cursor_and_charge_filter_are_documented_and_the_service_agrees(
    client, api_key_headers, document, case
):
    for path in CASE_LISTS:
        cursor = query_parameter(document, path, "starting_after")
        charge_filter = query_parameter(document, path, "charge_id")
        assert (cursor["pattern"], charge_filter["pattern"]) == (CASE_ID, CHARGE_FILTER)
        for name, value in (("starting_after", case["id"]), ("charge_id", case["charge_id"])):
            response = client.get(path, query_string={name: value}, headers=api_key_headers)
            assert response.status_code == 200, response.get_json()
            assert [listed["id"] for listed in response.json["data"]] == (
                [] if name == "starting_after" else [case["id"]]
            )
        for value in malformed_cursors("med_"):
            assert not allows(cursor, value), value
            response = client.get(
                path, query_string={"starting_after": value}, headers=api_key_headers
            )
            refused(response, "starting_after")
        for value in ("", "ch_", str(uuid.uuid4()), f"med_{uuid.uuid4()}"):
            assert not allows(charge_filter, value), value
            response = client.get(path, query_string={"charge_id": value}, headers=api_key_headers)
            refused(response, "charge_id")
        unknown = client.get(
            path, query_string={"charge_id": "ch_unknown"}, headers=api_key_headers
        )
        assert allows(charge_filter, "ch_unknown")
        assert (unknown.status_code, unknown.json["data"]) == (200, [])


def test_a_cursor_the_document_allows_but_of_no_own_charge_is_refused_as_described(
    client, api_key_headers, document
):
    schema = query_parameter(document, "/v1/charges", "starting_after")
    assert "one of your charges" in schema["description"]
    stranger = f"ch_{uuid.uuid4()}"
    response = client.get(
        "/v1/charges", query_string={"starting_after": stranger}, headers=api_key_headers
    )
    refused(response, "starting_after")


# Customer fields


@pytest.mark.parametrize(
    "document_number",
    [CPF, "529.982.247-25", "529 982 247 25", CNPJ, "11.222.333/0001-81", ALPHANUMERIC_CNPJ],
)
def test_a_tax_id_the_document_allows_is_accepted(client, api_key, document, document_number):
    schema = body_property(document, "post", "/v1/charges", "customer", "document")
    assert schema["pattern"] == TAX_ID
    assert allows(schema, document_number)
    response = charges.create(client, api_key, customer={"document": document_number})
    assert response.status_code == 201, response.get_json()


@pytest.mark.parametrize("document_number", ["", " ", "5299822472", "529.982.247-2X", "abc"])
def test_a_tax_id_the_document_refuses_is_refused(client, api_key, document, document_number):
    schema = body_property(document, "post", "/v1/charges", "customer", "document")
    assert not allows(schema, document_number)
    response = charges.create(client, api_key, customer={"document": document_number})
    refused(response, "customer.document")


def test_check_digits_are_described_and_enforced(client, api_key, document):
    schema = body_property(document, "post", "/v1/charges", "customer", "document")
    assert "check digits" in schema["description"]
    response = charges.create(client, api_key, customer={"document": "529.982.247-26"})
    refused(response, "customer.document")


def test_the_other_tax_ids_publish_the_same_rule(document):
    for schema in (
        body_property(document, "post", "/v1/charges", "expected_payer_tax_id"),
        query_parameter(document, "/v1/charges", "customer_id"),
        body_property(document, "post", "/v1/withdrawals", "bankAccount", "holderDocument"),
    ):
        assert schema["pattern"] == TAX_ID


@pytest.mark.parametrize(
    ("address", "accepted"),
    [
        ("ana@example.com", True),
        ("Ana.Souza+loja@mail.example.com.br", True),
        ("", False),
        ("ana", False),
        ("ana@example.test", False),
        ("ana@mail.LOCALHOST", False),
        ("ana@example.onion", False),
    ],
)
def test_an_email_the_document_allows_is_accepted_and_the_rest_refused(
    client, api_key, document, address, accepted
):
    payment_email = body_property(document, "post", "/v1/payments", "customerEmail")
    charge_email = body_property(document, "post", "/v1/charges", "customer", "email")
    assert payment_email["format"] == charge_email["format"] == "email"
    assert payment_email["pattern"] == charge_email["pattern"] == EMAIL
    assert allows(payment_email, address) is allows(charge_email, address) is accepted
    payment = payments.create(client, api_key, customerEmail=address)
    charge = charges.create(client, api_key, customer={"email": address})
    if accepted:
        assert (payment.status_code, charge.status_code) == (201, 201), address
    else:
        refused(payment, "customerEmail")
        refused(charge, "customer.email")


@pytest.mark.parametrize(
    ("document_number", "accepted"),
    [("", True), ("  ", True), ("NIF 123 456 789", True), ("./", False), ("12_3", False)],
)
def test_a_payment_customer_document_is_documented_as_the_service_reads_it(
    client, api_key, document, document_number, accepted
):
    schema = body_property(document, "post", "/v1/payments", "customerDocument")
    assert allows(schema, document_number) is accepted
    response = payments.create(client, api_key, customerDocument=document_number)
    if accepted:
        assert response.status_code == 201, response.get_json()
    else:
        refused(response, "customerDocument")


# Charge and payment bounds


def test_charge_bounds_are_documented_and_enforced(client, api_key, document):
    amount = body_property(document, "post", "/v1/charges", "amount")
    expires_in = body_property(document, "post", "/v1/charges", "expires_in")
    currency = body_property(document, "post", "/v1/charges", "currency")
    assert (amount["maximum"], expires_in["minimum"], currency["enum"]) == (
        MAX_AMOUNT,
        MIN_EXPIRES_IN,
        ["BRL"],
    )
    too_much = charges.create(client, api_key, amount=MAX_AMOUNT + 1)
    assert_error(too_much, 400, "invalid_request_error", "invalid_amount", param="amount")
    refused(charges.create(client, api_key, expires_in=MIN_EXPIRES_IN - 1), "expires_in")
    assert charges.create(client, api_key, expires_in=MIN_EXPIRES_IN).status_code == 201
    refused(charges.create(client, api_key, currency="EUR"), "currency")


def test_payment_bounds_are_documented_and_enforced(client, api_key, document):
    amount = body_property(document, "post", "/v1/payments", "amount")
    methods = body_property(document, "post", "/v1/payments", "paymentMethods")
    currency = body_property(document, "post", "/v1/payments", "currency")
    assert amount["maximum"] == MAX_AMOUNT and methods["uniqueItems"] is True
    too_much = payments.create(client, api_key, amount=MAX_AMOUNT + 1)
    assert_error(too_much, 400, "invalid_request_error", "invalid_amount", param="amount")
    refused(payments.create(client, api_key, paymentMethods=["PIX", "PIX"]), "paymentMethods")
    for code, accepted in (("brl", True), ("USDT", True), ("R$", False), ("BR", False)):
        assert allows(currency, code) is accepted
    refused(payments.create(client, api_key, currency="R$"), "currency")


# Webhook endpoints


def register(client, api_key: str, url: str):
    body = {"url": url, "events": ["charge.paid"]}
    return client.post(ENDPOINTS, json=body, headers={API_KEY_HEADER: api_key})


TEST_MODE_URLS = [
    "http://127.0.0.1:8080/hooks",
    "http://localhost:1/",
    "http://[::1]:65535/a?b=c#d",
    "https://hooks.example.com/acme/webhook?token=a%20b",
    "http://10.0.0.7",
]
REFUSED_URLS = [
    "",
    "http://127.0.0.1:0/hooks",
    "http://127.0.0.1:65536/hooks",
    "ftp://example.com/hooks",
    "http://user:pw@example.com/hooks",
    "http://example.com/a b",
    "http://example.com/a\tb",
    "http://[zz]/hooks",
    "http:///hooks",
    "//example.com/hooks",
]


@pytest.mark.parametrize("url", TEST_MODE_URLS)
def test_a_test_key_registers_any_url_the_document_allows(client, api_key, document, url):
    schema = body_property(document, "post", ENDPOINTS, "url")
    assert schema["pattern"] == ENDPOINT_URL
    assert allows(schema, url)
    response = register(client, api_key, url)
    assert response.status_code == 201, response.get_json()


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_a_url_the_document_refuses_is_refused(client, api_key, document, url):
    assert not allows(body_property(document, "post", ENDPOINTS, "url"), url)
    refused(register(client, api_key, url), "url")


def test_urls_generated_from_the_published_pattern_are_registered(app, client, api_key):
    """A fuzzer that keeps to the document registered no endpoint at all (375 of 375 refused)."""

    @settings(
        max_examples=25,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.from_regex(ENDPOINT_URL, fullmatch=True).filter(lambda url: len(url) <= 2048))
    def registers(url):
        response = register(client, api_key, url)
        assert response.status_code == 201, (url, response.get_json())

    registers()


def test_the_live_mode_rules_are_described_and_enforced(app, client, document):
    schema = body_property(document, "post", ENDPOINTS, "url")
    assert "live key's endpoint must use https" in schema["description"]
    assert "public unicast" in schema["description"]
    live_key = factories.make_api_key(app, factories.make_account(app), mode=KeyMode.LIVE)
    assert allows(schema, "http://93.184.216.34/hooks")
    refused(register(client, live_key, "http://93.184.216.34/hooks"), "url")
    refused(register(client, live_key, "https://127.0.0.1/hooks"), "url")


def test_event_names_are_documented_and_the_service_agrees(client, api_key, document):
    events = body_property(document, "post", ENDPOINTS, "events")
    assert events["items"]["enum"] == sorted(SUBSCRIBABLE)
    assert not allows(events, ["charge.exploded"])
    body = {"url": "http://127.0.0.1:9/hooks", "events": ["charge.exploded"]}
    refused(client.post(ENDPOINTS, json=body, headers={API_KEY_HEADER: api_key}), "events")
    body["events"] = sorted(SUBSCRIBABLE)
    response = client.post(ENDPOINTS, json=body, headers={API_KEY_HEADER: api_key})
    assert response.status_code == 201, response.get_json()


# Dispute cases


def test_every_character_a_published_file_name_may_hold_is_one_the_service_takes(document):
    """The file-name pattern names whole Unicode blocks (ECMA-262 cannot name categories); none
    of their characters may be one the service refuses, or the document would promise it."""
    pattern = body_property(document, "post", "/v1/med/cases/{case_id}/evidence", "file_name")
    allowed = [chr(code) for code in range(0x10000) if matches(pattern["pattern"], chr(code))]
    assert len(allowed) > 30_000
    refused_by_service = [
        char
        for char in allowed
        if char in "/\\" or char.isspace() or unicodedata.category(char) in HIDDEN_CATEGORIES
    ]
    assert not refused_by_service


@pytest.mark.parametrize(
    ("file_name", "accepted"),
    [
        ("Nota fiscal nº 42 — São Paulo.pdf", True),
        ("(1) [scan] #2.png", True),
        ("Счёт 報告書 영수증.pdf", True),
        ("a/b.pdf", False),
        ("a\\b.pdf", False),
        (" ", False),
        (" receipt.pdf", False),
        ("fdp\u202eexe.pdf", False),
        ("a\x7fb.pdf", False),
    ],
)
def test_an_evidence_file_name_is_documented_and_the_service_agrees(
    client, api_key_headers, document, case, file_name, accepted
):
    path = "/v1/med/cases/{case_id}/evidence"
    schema = body_property(document, "post", path, "file_name")
    assert allows(schema, file_name) is accepted
    body = {"file_name": file_name, "file_size": 10, "mime_type": "application/pdf"}
    response = client.post(path.format(case_id=case["id"]), json=body, headers=api_key_headers)
    if accepted:
        assert response.status_code == 201, response.get_json()
    else:
        refused(response, "file_name")


@pytest.mark.parametrize(
    ("reason", "accepted"),
    [
        (" abcde ", True),
        ("a   e", True),
        ("     ", False),
        ("  abcd  ", False),
        ("ab\u3000\u3000cd", True),
    ],
)
def test_an_appeal_reason_is_documented_and_the_service_agrees(
    client, api_key_headers, document, case, reason, accepted
):
    path = "/v1/med/cases/{case_id}/appeal"
    assert allows(body_property(document, "post", path, "reason"), reason) is accepted
    response = client.post(
        path.format(case_id=case["id"]), json={"reason": reason}, headers=api_key_headers
    )
    if accepted:
        assert response.status_code == 200, response.get_json()
    else:
        refused(response, "reason")
