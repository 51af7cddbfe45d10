"""POST /v1/withdrawals/validate-pix-key over HTTP: answer shapes, auth, 400s, the CNPJ waiver."""

import pytest

from app.extensions import db
from app.models import Account, Role
from app.pix.keys import CNPJ_WAIVER_NOT_ENABLED
from tests.support import factories
from tests.support.http import assert_error, bearer, login

URL = "/v1/withdrawals/validate-pix-key"
BAD_CHECKSUM_CNPJ = "11222333000180"


def _validate(client, headers, body, query: str = ""):
    response = client.post(URL + query, headers=headers, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def _enable_cnpj_waiver(app, account_id: str) -> None:
    with app.app_context():
        db.session.get(Account, account_id).cnpj_checksum_waiver = True
        db.session.commit()


def test_valid_key_answers_type_and_normalised_form(client, owner_headers):
    answer = _validate(client, owner_headers, {"key": "  Fulano@Example.com "})
    assert answer == {"valid": True, "type": "EMAIL", "normalised": "fulano@example.com"}
    answer = _validate(client, owner_headers, {"key": "529.982.247-25", "type": "CPF"})
    assert answer == {"valid": True, "type": "CPF", "normalised": "52998224725"}


def test_invalid_key_is_a_200_with_errors(client, owner_headers):
    answer = _validate(client, owner_headers, {"key": "52998224725", "type": "PHONE"})
    assert set(answer) == {"valid", "type", "errors"}
    assert answer["valid"] is False and answer["type"] == "PHONE"
    assert "+55" in answer["errors"][0]


def test_undetectable_key_answers_type_null(client, owner_headers):
    answer = _validate(client, owner_headers, {"key": "hello"})
    assert answer["valid"] is False and answer["type"] is None
    assert "not a CPF, CNPJ, e-mail, phone or random key" in answer["errors"][0]


def test_type_null_means_detect(client, owner_headers):
    answer = _validate(client, owner_headers, {"key": "+5511987654321", "type": None})
    assert answer == {"valid": True, "type": "PHONE", "normalised": "+5511987654321"}


def test_needs_a_bearer_token(client):
    response = client.post(URL, json={"key": "52998224725"})
    assert_error(response, 401, "authentication_error", "unauthorized")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "key"),
        ({"key": 52998224725}, "key"),
        ({"key": None}, "key"),
        ({"key": "52998224725", "type": "RANDOM"}, "type"),
        ({"key": "52998224725", "type": "cpf"}, "type"),
        ({"key": "52998224725", "pixKey": "x"}, "pixKey"),
    ],
)
def test_malformed_body_is_400(client, owner_headers, body, param):
    response = client.post(URL, headers=owner_headers, json=body)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("?strictCnpj=maybe", "strictCnpj"),
        ("?strictCnpj=False", "strictCnpj"),
        ("?strictCnpj=0", "strictCnpj"),
        ("?strictCnpj=false&strictCnpj=true", "strictCnpj"),
        ("?strict=false", "strict"),
    ],
)
def test_malformed_query_is_400(client, owner_headers, query, param):
    response = client.post(URL + query, headers=owner_headers, json={"key": BAD_CHECKSUM_CNPJ})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)


def test_strict_cnpj_false_is_ignored_without_the_accounts_waiver(client, owner_headers):
    strict = _validate(client, owner_headers, {"key": BAD_CHECKSUM_CNPJ})
    assert strict == {
        "valid": False,
        "type": "CNPJ",
        "errors": ["The CNPJ's check digits are wrong."],
    }
    asked = _validate(client, owner_headers, {"key": BAD_CHECKSUM_CNPJ}, "?strictCnpj=false")
    assert asked["valid"] is False and asked["type"] == "CNPJ"
    assert CNPJ_WAIVER_NOT_ENABLED in asked["errors"]


def test_strict_cnpj_false_accepts_a_bad_checksum_with_the_accounts_waiver(
    app, client, owner, owner_headers
):
    _enable_cnpj_waiver(app, owner.account_id)
    answer = _validate(client, owner_headers, {"key": BAD_CHECKSUM_CNPJ}, "?strictCnpj=false")
    assert answer == {"valid": True, "type": "CNPJ", "normalised": BAD_CHECKSUM_CNPJ}
    strict = _validate(client, owner_headers, {"key": BAD_CHECKSUM_CNPJ}, "?strictCnpj=true")
    assert strict["valid"] is False
    lowercase = _validate(client, owner_headers, {"key": "12abc34501de35"}, "?strictCnpj=false")
    assert lowercase["valid"] is False


def test_documented_in_openapi_with_jwt_security(client):
    spec = client.get("/v1/openapi.json").json
    operation = spec["paths"][URL]["post"]
    assert operation["security"] == [{"jwt": []}]
    assert {"200", "400", "401"} <= set(operation["responses"])
    assert [p["name"] for p in operation["parameters"] if p["in"] == "query"] == ["strictCnpj"]


def test_any_active_member_may_validate(app, client, owner):
    member = factories.make_member(app, owner.account_id, role=Role.MEMBER)
    answer = _validate(client, bearer(login(client, member)), {"key": "52998224725"})
    assert answer == {"valid": True, "type": "CPF", "normalised": "52998224725"}
