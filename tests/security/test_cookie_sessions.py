"""The cookie session belongs to pages (issue 22): an API answer neither reads nor sets it,
so it never says `Vary: Cookie`, even to a caller that sends the dashboard's cookie, and
the dashboard keeps its session."""

from tests.support import factories
from tests.support.charges import created
from tests.support.dashboard import sign_in


def _varies_on_cookie(response) -> bool:
    return "cookie" in {value.strip().lower() for value in response.vary}


def test_an_api_answer_neither_reads_nor_sets_the_dashboard_cookie(app, client, owner):
    signed_in = sign_in(client, owner)
    assert signed_in.status_code == 302
    assert client.get_cookie("session") is not None  # the browser's cookie goes with each call
    api_key = factories.make_api_key(app, owner.account_id)

    charge = created(client, api_key)
    read = client.get(f"/v1/charges/{charge['id']}", headers={"apikey": api_key})

    assert read.status_code == 200
    for answer in (read, client.get("/healthz")):
        assert not _varies_on_cookie(answer)
        assert "Set-Cookie" not in answer.headers
    page = client.get("/dashboard/")
    assert page.status_code == 200  # still signed in: the API left the session alone
    assert _varies_on_cookie(page)
