"""Bodies nested deeper than MAX_JSON_NESTING (64) are a 400 in the error envelope before any
parser sees them: Python's JSON parser recurses once per level, so 50,000 `[` were a 500."""

import uuid

import pytest

from app.errors import MAX_JSON_NESTING
from tests.support import factories
from tests.support.http import assert_error

DEEP = "[" * 50_000 + "]" * 50_000
ROUTES = ["/v1/auth/login", "/v1/charges", "/v1/webhooks/endpoints"]


@pytest.fixture
def headers(app):
    api_key = factories.make_api_key(app, factories.make_account(app))
    return {"apikey": api_key, "Idempotency-Key": uuid.uuid4().hex}


def _refused_as_too_deep(response) -> None:
    error = assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert "more than 64 levels deep" in error["message"]
    assert "Traceback" not in response.get_data(as_text=True)


@pytest.mark.parametrize("route", ROUTES)
def test_a_deeply_nested_body_is_a_400(client, headers, route):
    response = client.post(route, data=DEEP, content_type="application/json", headers=headers)
    _refused_as_too_deep(response)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/merchant+json"], ids=["text", "json-suffix"]
)
def test_any_content_type_is_checked(client, headers, route, content_type):
    """The idempotency fingerprint parses the body whatever its Content-Type says."""
    response = client.post(route, data=DEEP, content_type=content_type, headers=headers)
    _refused_as_too_deep(response)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_body_in_another_unicode_encoding_is_checked(client, headers, encoding):
    """json.loads reads UTF-16 and UTF-32 bytes too; the brackets are counted in that text."""
    body = DEEP[:2_000].encode(encoding)
    response = client.post("/v1/charges", data=body, content_type="text/plain", headers=headers)
    _refused_as_too_deep(response)


def test_an_object_nested_one_level_too_deep_is_refused(client, headers):
    body = '{"a":' * (MAX_JSON_NESTING + 1) + "1" + "}" * (MAX_JSON_NESTING + 1)
    response = client.post("/v1/webhooks/endpoints", data=body, headers=headers)
    _refused_as_too_deep(response)


def test_the_limit_itself_is_parsed_as_usual(client, headers):
    body = {"url": "https://hooks.example.com", "events": ["charge.created"]}  # 2 levels
    for _ in range(MAX_JSON_NESTING - 2):
        body = {"nested": body}
    response = client.post("/v1/webhooks/endpoints", json=body, headers=headers)
    error = assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert "levels deep" not in error["message"]  # refused for its fields, not its depth


def test_brackets_inside_strings_are_text(client, headers):
    response = client.post(
        "/v1/charges",
        json={"amount": 1000, "payment_method": "pix", "description": "[{" * 500},
        headers=headers,
    )
    assert response.status_code != 500
    assert "levels deep" not in response.get_data(as_text=True)
