"""A route's argument schema is built once and shared by every request (issue 22): requests
parsed at the same time each get their own answer, a refusal never leaks into another's."""

from concurrent.futures import ThreadPoolExecutor

from tests.support import factories
from tests.support.charges import create
from tests.support.http import assert_error


def test_concurrent_requests_sharing_a_schema_each_get_their_own_answer(app):
    api_key = factories.make_api_key(app, factories.make_account(app))

    def send(index: int):
        amount = -index if index % 2 else 1000 + index
        with app.test_client() as client:
            return amount, create(client, api_key, amount=amount, metadata={"n": str(index)})

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(send, range(1, 81)))
    for amount, response in answers:
        if amount < 0:
            assert_error(response, 400, "invalid_request_error", "invalid_amount", "amount")
        else:
            assert response.status_code == 201, response.get_json()
            assert response.get_json()["amount"] == amount
            assert response.get_json()["metadata"]["n"] == str(amount - 1000)
