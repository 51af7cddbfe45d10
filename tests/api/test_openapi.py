"""The OpenAPI document is served, complete, and its page works without a CDN."""


def test_openapi_document_lists_every_v1_route(app, client):
    spec = client.get("/v1/openapi.json").json
    documented = {(path, method.upper()) for path, item in spec["paths"].items() for method in item}
    served = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/") or rule.endpoint.startswith(
            ("api-docs", "docs_assets", "test_probe")
        ):
            continue
        path = rule.rule.replace("<", "{").replace(">", "}")
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
