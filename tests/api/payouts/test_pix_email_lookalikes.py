"""Look-alike e-mail Pix keys over HTTP: the pre-flight check says they are invalid and a
payout to one is refused before anything is created."""

import pytest

from app.models import Payout
from tests.support.http import assert_error, count_rows
from tests.support.payouts import funded_merchant, request

CYRILLIC = "pay@ex\u0430mple.com"
IDNA_FORM = "pay@xn--exmple-4nf.com"


@pytest.mark.parametrize("key", [CYRILLIC, IDNA_FORM])
@pytest.mark.parametrize("key_type", ["EMAIL", None])
def test_validate_pix_key_says_a_look_alike_is_invalid(client, owner_headers, key, key_type):
    response = client.post(
        "/v1/withdrawals/validate-pix-key",
        headers=owner_headers,
        json={"key": key, "type": key_type},
    )
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    assert (answer["valid"], answer["type"]) == (False, "EMAIL")
    assert "normalised" not in answer
    assert answer["errors"]


@pytest.mark.parametrize("key", [CYRILLIC, IDNA_FORM])
def test_a_payout_to_a_look_alike_is_refused(app, client, monkeypatch, key):
    merchant = funded_merchant(app, client, monkeypatch)

    response = request(client, merchant, pixKey=key, pixKeyType="EMAIL")

    assert_error(response, 400, "invalid_request_error", "invalid_pix_key", param="pixKey")
    assert count_rows(app, Payout) == 0
