"""A key the web process remembers (issue 22: no database read for a known key) stops working
at the next request once another process revoked it: here `flask demo seed`, run as an
operator runs it, revokes the demo keys and issues new ones."""

import pytest

pytestmark = pytest.mark.slow

BALANCE = "/v1/wallets/balance"


def test_a_key_revoked_by_an_operator_command_is_refused_at_the_next_request(deployed):
    old_key = deployed.seed["test_api_key"]
    for _ in range(3):  # known to the web process now
        assert deployed.api("GET", BALANCE).status_code == 200

    deployed.reseed()  # another process: revokes the demo keys, prints new ones

    refused = deployed.api("GET", BALANCE, headers={"apikey": old_key})
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["type"] == "authentication_error"
    assert deployed.api("GET", BALANCE).status_code == 200  # the new key
