"""One error envelope and a request id on every answer, whatever went wrong."""

import logging
import uuid

import pytest

from tests.support import factories
from tests.support.http import assert_error


def test_every_error_status_uses_the_envelope(app, client, owner, owner_headers):
    """400, 401, 403, 404, 405, 409 and 500 all answer {error:{type,code,message}, request_id}."""
    from app.models import Role
    from tests.support import factories
    from tests.support.http import bearer, login

    member = bearer(login(client, factories.make_member(app, owner.account_id, Role.MEMBER)))
    key = factories.make_api_key(app, owner.account_id)
    idem = {"apikey": key, "Idempotency-Key": "same-key-0001"}
    client.post("/v1/test-probe/writes", headers=idem, json={"amount": 1})
    cases = [
        (
            client.post("/v1/api-keys", headers=owner_headers, json={"label": 5}),
            400,
            "invalid_request_error",
            "invalid_request",
        ),
        (client.get("/v1/api-keys"), 401, "authentication_error", "unauthorized"),
        (
            client.post("/v1/api-keys", headers=member, json={}),
            403,
            "permission_error",
            "API_KEY_ROLE_REQUIRED",
        ),
        (client.get("/v1/no-such-route"), 404, "not_found_error", "not_found"),
        (
            client.patch("/v1/api-keys", headers=owner_headers),
            405,
            "invalid_request_error",
            "method_not_allowed",
        ),
        (
            client.post("/v1/test-probe/writes", headers=idem, json={"amount": 2}),
            409,
            "conflict_error",
            "idempotency_key_reused",
        ),
        (client.get("/v1/test-probe/crash"), 500, "api_error", "internal_error"),
    ]
    for response, status, error_type, code in cases:
        assert_error(response, status, error_type, code)


def test_validation_errors_name_each_field(client, owner_headers):
    response = client.post(
        "/v1/api-keys", headers=owner_headers, json={"label": "x" * 65, "test": "maybe", "extra": 1}
    )
    error = assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert {d["param"] for d in error["details"]} == {"label", "test", "extra"}
    assert all(d["message"] for d in error["details"])
    assert "param" not in error  # several fields failed, so no single one is named


def test_one_failing_field_is_named_in_param(client, owner_headers):
    response = client.post("/v1/api-keys", headers=owner_headers, json={"label": "x" * 65})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="label")


def test_malformed_json_is_a_400_in_the_envelope(client, owner_headers):
    response = client.post(
        "/v1/api-keys", headers=owner_headers, data="{not json", content_type="application/json"
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request")
    response = client.post("/v1/auth/login", data="[1,", content_type="application/json")
    assert_error(response, 400, "invalid_request_error", "invalid_request")


def test_405_lists_the_allowed_methods(client):
    response = client.put("/v1/auth/login")
    assert_error(response, 405, "invalid_request_error", "method_not_allowed")
    assert "POST" in response.headers["Allow"]


def test_unexpected_errors_are_logged_but_not_leaked(client, caplog):
    with caplog.at_level(logging.ERROR):
        response = client.get("/v1/test-probe/crash", headers={"X-Request-Id": "trace-me-123"})
    error = assert_error(response, 500, "api_error", "internal_error")
    assert "secret internal detail" not in response.get_data(as_text=True)
    assert "Traceback" not in response.get_data(as_text=True)
    assert error["message"] == "An unexpected error occurred."
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert logged and logged[0].request_id == "trace-me-123"
    assert "secret internal detail" in logged[0].exc_text or "secret internal detail" in str(
        logged[0].exc_info
    )


def test_request_id_is_echoed_when_sent(client):
    response = client.get("/healthz", headers={"X-Request-Id": "client-chosen-42"})
    assert response.headers["X-Request-Id"] == "client-chosen-42"
    error = client.get("/v1/nope", headers={"X-Request-Id": "client-chosen-43"})
    assert error.headers["X-Request-Id"] == "client-chosen-43"
    assert error.json["request_id"] == "client-chosen-43"


def test_request_id_is_generated_when_absent_or_unusable(client):
    first = client.get("/healthz").headers["X-Request-Id"]
    second = client.get("/healthz").headers["X-Request-Id"]
    assert first.startswith("req_") and second.startswith("req_") and first != second
    too_long = client.get("/healthz", headers={"X-Request-Id": "x" * 201}).headers["X-Request-Id"]
    assert too_long.startswith("req_")


def test_every_response_has_a_request_id(client, owner_headers):
    for response in (
        client.get("/v1/api-keys", headers=owner_headers),
        client.get("/v1/openapi.json"),
        client.get("/dashboard/login"),
        client.get("/dashboard/nope"),
        client.get("/static/app.css"),
    ):
        assert response.headers["X-Request-Id"]


def test_dashboard_errors_are_html_pages(client):
    response = client.get("/dashboard/no-such-page")
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert response.headers["X-Request-Id"] in response.get_data(as_text=True)


def test_request_log_line_carries_id_account_fingerprint_status_duration(
    app, client, owner, caplog
):
    from tests.support import factories

    key = factories.make_api_key(app, owner.account_id)
    with caplog.at_level(logging.INFO, logger="acme.request"):
        client.get("/v1/test-probe/whoami", headers={"apikey": key, "X-Request-Id": "log-me-1"})
    record = next(r for r in caplog.records if r.name == "acme.request")
    import hashlib

    assert record.request_id == "log-me-1"
    assert record.account_id == owner.account_id
    assert record.apiKeyFingerprint == hashlib.sha256(key.encode()).hexdigest()
    assert record.status == 200
    assert record.duration_ms >= 0
    assert key not in caplog.text


PAYMENT = {"amount": 100, "paymentMethods": ["PIX"], "idempotencyKey": "nul-check-0001"}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/v1/payments", {**PAYMENT, "customerName": "a\0b"}),
        ("post", "/v1/payments", {**PAYMENT, "metadata": {"k": "\0"}}),
        ("get", "/v1/payments/a%00b", None),
        ("get", "/v1/payments?status=PAID%00", None),
        ("post", "/v1/charges", {"amount": 100, "payment_method": "pix", "description": "x\0"}),
    ],
    ids=["json-field", "json-metadata", "path", "query", "charge"],
)
def test_a_nul_character_anywhere_is_400_never_a_database_error(app, client, method, path, body):
    """PostgreSQL cannot store U+0000: it used to surface as a 500 there."""
    api_key = factories.make_api_key(app, factories.make_account(app))
    headers = {"apikey": api_key, "Idempotency-Key": "nul-check-0001"}
    response = getattr(client, method)(path, json=body, headers=headers)
    assert_error(response, 400, "invalid_request_error", "invalid_request")


def test_a_nul_character_in_a_form_post_is_400(client):
    response = client.post("/dashboard/login", data={"email": "a\0@example.com", "password": "x"})
    assert response.status_code == 400


def test_an_escaped_backslash_before_u0000_is_plain_text(app, client):
    api_key = factories.make_api_key(app, factories.make_account(app))
    response = client.post(
        "/v1/payments",
        data=b'{"amount": 100, "paymentMethods": ["PIX"], "customerName": "a\\\\u0000",'
        b' "idempotencyKey": "nul-check-0002"}',
        headers={"apikey": api_key, "Content-Type": "application/json"},
    )
    assert response.status_code == 201
    assert response.get_json()["customerName"] == "a\\u0000"


@pytest.mark.parametrize(
    "text",
    [rb"abc\ud800", rb"\udc00abc", rb"\uD83D", rb"\\\ud800"],
    ids=["high", "low", "upper-case", "after-escaped-backslash"],
)
def test_a_lone_surrogate_in_json_is_a_400_not_a_500(app, client, text):
    key = factories.make_api_key(app, factories.make_account(app))
    body = b'{"amount": 100, "payment_method": "pix", "description": "' + text + b'"}'
    response = client.post(
        "/v1/charges",
        data=body,
        headers={
            "apikey": key,
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 400
    assert "surrogate" in response.get_json()["error"]["message"]


def test_a_surrogate_pair_and_an_escaped_backslash_u_are_plain_text(app, client):
    key = factories.make_api_key(app, factories.make_account(app))
    body = rb'{"amount": 100, "payment_method": "pix", "description": "ok \ud83d\ude00 \\ud800"}'
    response = client.post(
        "/v1/charges",
        data=body,
        headers={
            "apikey": key,
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["metadata"]["description"] == "ok \U0001f600 \\ud800"
