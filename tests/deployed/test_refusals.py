"""Requests the deployed stack must refuse, over HTTP only (issue 19): bodies nested too deep
for Python's JSON parser, text with an escaped NUL or a lone surrogate, webhook URLs with
blanks or control characters or a multicast host, and look-alike e-mail Pix keys. The same
cases through the test client are in tests/api/test_json_nesting.py, test_errors.py,
test_webhook_urls.py and test_pix_email_lookalikes.py."""

import pytest
import requests

pytestmark = pytest.mark.slow

DEEP = "[" * 50_000 + "]" * 50_000
NESTING_ROUTES = ["/v1/auth/login", "/v1/charges", "/v1/webhooks/endpoints"]
ENDPOINTS = "/v1/webhooks/endpoints"
BLANK_OR_CONTROL_URLS = [
    "https://hooks.example.com/a\r\nX-Injected: 1",
    "https://hooks.example.com/a\tb",
    "https://hooks.example.com/a b",
]
# Test endpoints may be private or multicast here (WEBHOOK_ALLOW_PRIVATE_TEST_URLS is on in
# the stack, for receivers on localhost), so the multicast refusal is a live endpoint's.
MULTICAST_URL = "https://224.0.0.1/hook"
LOOK_ALIKE_EMAILS = ["pay@ex\u0430mple.com", "pay@xn--exmple-4nf.com"]


def _error(response: requests.Response, status: int, code: str, param: str | None = None):
    """The contract's envelope (tests/support/http.py's `assert_error`, over HTTP)."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "request_id"}, body
    assert body["error"]["type"] == "invalid_request_error", body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"], body
    assert body["request_id"] == response.headers["X-Request-Id"]
    if param is not None:
        assert body["error"].get("param") == param, body
    return body["error"]


@pytest.mark.parametrize("route", NESTING_ROUTES)
def test_a_deeply_nested_body_is_a_400_without_a_traceback(deployed, route):
    logged_before = len(deployed.log("web"))
    response = deployed.api("POST", route, data=DEEP, headers={"Content-Type": "application/json"})

    error = _error(response, 400, "invalid_request")
    assert "more than 64 levels deep" in error["message"]
    assert "Traceback" not in response.text
    assert "Traceback" not in deployed.log("web")[logged_before:]


# A charge's description as raw JSON text: the escapes are the body's, not Python's.
UNSTORABLE_DESCRIPTIONS = {
    "nul": ("Pedido \\u0000 42", "NUL character"),
    "lone-surrogate": ("Pedido \\ud800 42", "lone UTF-16 surrogate"),
}


@pytest.mark.parametrize(
    "description,refusal", UNSTORABLE_DESCRIPTIONS.values(), ids=list(UNSTORABLE_DESCRIPTIONS)
)
def test_escaped_text_no_database_can_store_is_a_400(deployed, description, refusal):
    body = f'{{"amount": 1500, "payment_method": "pix", "description": "{description}"}}'
    response = deployed.api(
        "POST", "/v1/charges", data=body, headers={"Content-Type": "application/json"}
    )

    assert refusal in _error(response, 400, "invalid_request")["message"]


def test_an_escape_that_is_plain_text_is_kept(deployed):
    body = '{"amount": 1500, "payment_method": "pix", "description": "Caf\\u00e9 \\ud83d\\ude00"}'
    response = deployed.api(
        "POST", "/v1/charges", data=body, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 201, response.text
    assert response.json()["metadata"]["description"] == "Café \U0001f600"


@pytest.mark.parametrize("url", BLANK_OR_CONTROL_URLS, ids=["crlf", "tab", "space"])
def test_a_webhook_url_with_a_blank_or_control_character_is_refused(deployed, url):
    response = deployed.api("POST", ENDPOINTS, json={"url": url, "events": ["charge.created"]})

    _error(response, 400, "invalid_request", param="url")
    listed = deployed.api("GET", ENDPOINTS)
    assert listed.status_code == 200, listed.text
    assert url not in [endpoint["url"] for endpoint in listed.json()["data"]]


def test_a_live_webhook_url_on_a_multicast_address_is_refused(deployed):
    response = deployed.api(
        "POST",
        ENDPOINTS,
        json={"url": MULTICAST_URL, "events": ["charge.created"]},
        headers={"apikey": deployed.seed["live_api_key"]},
    )

    error = _error(response, 400, "invalid_request", param="url")
    assert "resolves to a multicast address" in error["message"]


@pytest.fixture(scope="module")
def owner_headers(deployed) -> dict:
    """The seeded owner's dashboard JWT, from POST /v1/auth/login."""
    response = deployed.request(
        "POST",
        "/v1/auth/login",
        json={"email": deployed.seed["email"], "password": deployed.seed["password"]},
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['token']}"}


@pytest.mark.parametrize("key", LOOK_ALIKE_EMAILS, ids=["cyrillic", "idna"])
@pytest.mark.parametrize("key_type", ["EMAIL", None], ids=["email", "untyped"])
def test_a_look_alike_email_pix_key_is_not_valid(deployed, owner_headers, key, key_type):
    response = deployed.request(
        "POST",
        "/v1/withdrawals/validate-pix-key",
        headers=owner_headers,
        json={"key": key, "type": key_type},
    )

    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["valid"], answer["type"]) == (False, "EMAIL"), answer
    assert "normalised" not in answer
    assert answer["errors"]
