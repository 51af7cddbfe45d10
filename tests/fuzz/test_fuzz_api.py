"""Schemathesis fuzzes every operation of the API's own OpenAPI document: no answer is a 5xx,
every error is the contract's envelope, and every answer is documented (status, content type,
headers, body schema).

Left out on purpose: schemathesis's `negative_data_rejection`. Its reports here were the
fuzzer's own: it counts a removed security header as invalid data although this test sends the
real credential anyway, and it "adds" unnamed, empty query parameters that no HTTP request can
carry. Its one real finding, the API-key issue body documented as required, is pinned in
test_fuzz_regressions.py.
"""

import re

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)

from app.errors import ERROR_TYPES
from tests.fuzz.conftest import EXAMPLES_PER_OPERATION, load_schema

FLASK_ANSWERED_METHODS = {"HEAD", "OPTIONS"}  # on every route, undocumented

schema = load_schema()


def error_envelope(ctx, response, case) -> None:
    """Every 4xx and 5xx is `{"error": {type, code, message, param?, details?}, "request_id"}`,
    its request id also in `X-Request-Id`."""
    if response.status_code < 400:
        return
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error", "request_id"}, body
    error = body["error"]
    assert set(error) <= {"type", "code", "message", "param", "details"}, error
    assert error["type"] in ERROR_TYPES, error
    assert isinstance(error["code"], str) and error["code"], error
    assert isinstance(error["message"], str) and error["message"], error
    assert isinstance(error.get("param", ""), str), error
    for detail in error.get("details", []):
        assert set(detail) <= {"param", "message"}, error
    assert body["request_id"] == response.headers["x-request-id"][0], body
    if response.status_code == 429:
        assert re.fullmatch(r"\d+", response.headers["retry-after"][0])


def status_code_documented(ctx, response, case) -> None:
    """The answer's status is listed for the operation itself: the `default` response that
    flask-smorest adds everywhere would otherwise let any status pass. The coverage phase also
    probes each route with methods it does not serve: 405, except the two Flask answers itself."""
    if case.method.upper() != case.operation.method.upper():
        if case.method.upper() not in FLASK_ANSWERED_METHODS:
            assert response.status_code == 405, response.status_code
        return
    documented = set(case.operation.definition.raw["responses"]) - {"default"}
    assert str(response.status_code) in documented, (
        f"{response.status_code} is not documented; documented: {sorted(documented)}"
    )


CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_documented,
    error_envelope,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    database=None,
    deadline=None,
    # The fixtures (app, credentials) are meant to be shared by all of an operation's examples.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_api_answers_every_request_as_documented(case, fuzz_app, fuzz_credentials, seeded_ids):
    """Valid examples address real resources where the path holds an id (an unknown id is a
    404 before anything else is read); invalid examples keep what was generated."""
    if case.meta is not None and case.meta.generation.mode is GenerationMode.POSITIVE:
        for name, generated in (case.path_parameters or {}).items():
            case.path_parameters[name] = seeded_ids.for_parameter(name) or generated
    case.call_and_validate(app=fuzz_app, headers=fuzz_credentials.headers_for(case), checks=CHECKS)
