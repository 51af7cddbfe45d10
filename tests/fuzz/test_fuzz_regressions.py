"""What the schemathesis run (test_fuzz_api.py) found, pinned as plain requests."""

from tests.support.http import assert_error


def test_issuing_an_api_key_needs_no_body_and_the_document_says_so(client, owner_headers):
    """Every field of the issue body is optional and a POST without one issues a live key, but
    the document declared the body required."""
    body = client.get("/v1/openapi.json").json["paths"]["/v1/api-keys"]["post"]["requestBody"]
    assert body["required"] is False
    response = client.post("/v1/api-keys", headers=owner_headers)
    assert response.status_code == 201, response.get_json()
    assert response.json["mode"] == "live" and response.json["label"] is None


def test_an_api_key_issue_body_that_is_not_an_object_is_still_refused(client, owner_headers):
    response = client.post("/v1/api-keys", headers=owner_headers, json=["label"])
    assert_error(response, 400, "invalid_request_error", "invalid_request")
