"""The OpenAPI document is served, complete, and its page works without a CDN."""

import re

from tests.support import factories
from tests.support.http import assert_error


def test_openapi_document_lists_every_v1_route(app, client):
    spec = client.get("/v1/openapi.json").json
    documented = {(path, method.upper()) for path, item in spec["paths"].items() for method in item}
    served = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/") or rule.endpoint.startswith(
            ("api-docs", "docs_assets", "test_probe")
        ):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        served |= {(path, m) for m in rule.methods - {"HEAD", "OPTIONS"}}
    assert served, "no /v1 routes found"
    assert served <= documented


def test_routes_declare_their_security_and_error_envelope(client):
    spec = client.get("/v1/openapi.json").json
    schemes = spec["components"]["securitySchemes"]
    assert schemes["apikey"] == {"type": "apiKey", "in": "header", "name": "apikey"}
    assert schemes["jwt"]["scheme"] == "bearer"
    assert spec["paths"]["/v1/api-keys"]["get"]["security"] == [{"jwt": []}]
    assert "request_id" in spec["components"]["schemas"]["Error"]["properties"]


def test_interactive_page_loads_its_assets_from_this_service(client):
    page = client.get("/v1/docs")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "/v1/docs/assets/swagger-ui-bundle.js" in html
    assert "https://" not in html
    assert "<script>" not in html  # no inline script: the page keeps the strict CSP
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js"):
        assert client.get(f"/v1/docs/assets/{asset}").status_code == 200
    assert client.get("/static/swagger-init.js").status_code == 200


def test_charge_creation_documents_its_idempotency_header_and_public_charge(client):
    spec = client.get("/v1/openapi.json").json
    for path in ("/v1/charges", "/v1/pix/charges"):
        create = spec["paths"][path]["post"]
        header = next(p for p in create["parameters"] if p["name"] == "Idempotency-Key")
        assert header["in"] == "header" and header["required"] is True
        assert header["schema"] == {"type": "string", "minLength": 8, "maxLength": 128}
        assert create["security"] == [{"apikey": []}]
        assert {"201", "400", "401", "403", "409", "422"} <= set(create["responses"])
    charge = spec["components"]["schemas"]["Charge"]["properties"]
    assert {"id", "status", "pix", "checkout_url", "settlement"} <= set(charge)
    assert "provider" not in charge
    assert spec["paths"]["/v1/pix/locations/{location_id}"]["get"]["security"] == []


def _operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method != "parameters":  # shared by the path's operations, not one of them
                yield path, method, operation


def test_every_api_key_operation_documents_its_rate_limit(client):
    """require_api_key counts every request against per-minute limits, so each API-key route
    can answer 429; the login keeps its own 429 (failed sign-ins), and no other route has one."""
    spec = client.get("/v1/openapi.json").json
    rate_limited = spec["components"]["responses"]["RATE_LIMITED"]
    assert rate_limited["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    assert "attempts" not in rate_limited["description"]
    assert set(rate_limited["headers"]) == {
        "Retry-After",
        "X-RateLimit-Limit-Minute",
        "X-RateLimit-Remaining-Minute",
    }
    api_key_operations = 0
    for path, method, operation in _operations(spec):
        documented = operation["responses"].get("429")
        if operation.get("security") == [{"apikey": []}]:
            api_key_operations += 1
            assert documented == {"$ref": "#/components/responses/RATE_LIMITED"}, (method, path)
        elif (path, method) != ("/v1/auth/login", "post"):
            assert documented is None, (method, path)
    assert api_key_operations > 40
    login = spec["paths"]["/v1/auth/login"]["post"]["responses"]["429"]
    assert "attempts" in login["description"]


def test_successful_api_key_answers_document_the_allowance_headers(client):
    spec = client.get("/v1/openapi.json").json
    for path, method, operation in _operations(spec):
        if operation.get("security") != [{"apikey": []}]:
            continue
        successes = {s: r for s, r in operation["responses"].items() if s.startswith("2")}
        assert successes, (method, path)
        for status, response in successes.items():
            assert set(response["headers"]) >= {
                "X-RateLimit-Limit-Minute",
                "X-RateLimit-Remaining-Minute",
            }, (method, path, status)


def test_a_rate_limited_answer_carries_the_documented_headers(app, client, redis, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    headers = {"apikey": factories.make_api_key(app, factories.make_account(app))}
    assert client.get("/v1/wallets", headers=headers).status_code == 200
    refused = client.get("/v1/wallets", headers=headers)
    assert_error(refused, 429, "rate_limit_error", "rate_limited")
    documented = client.get("/v1/openapi.json").json["components"]["responses"]["RATE_LIMITED"]
    for name in documented["headers"]:
        assert int(refused.headers[name]) >= 0
