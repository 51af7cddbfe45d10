"""Which language the dashboard speaks (`app.i18n`): the member's own choice, kept on them;
before that the browser's Accept-Language; failing both, the account's country. The hosted
checkout follows the payer's browser only."""

from urllib.parse import urlparse

import pytest

from app.extensions import db
from app.models import User
from tests.support import factories
from tests.support.charges import created
from tests.support.dashboard import post_form, sign_in

OVERVIEW = "/dashboard/"


def _lang(response) -> str:
    html = response.get_data(as_text=True)
    return html.split('<html lang="', 1)[1].split('"', 1)[0]


def _choose(client, locale: str, next_page: str = "/dashboard/payments"):
    return post_form(client, OVERVIEW, "/dashboard/language", {"locale": locale, "next": next_page})


@pytest.mark.parametrize(
    ("asked", "shown"),
    [
        ("pt-BR,pt;q=0.9,en;q=0.8", "pt-BR"),
        ("pt-PT", "pt-PT"),
        ("en-US,en;q=0.9", "en"),
        ("fr-FR,fr;q=0.9", "pt-BR"),  # none of ours: the Brazilian account's language
        ("", "pt-BR"),  # the browser asks for nothing
        ("pt", "pt-BR"),  # Portuguese of no country: the account's country's
    ],
)
def test_before_choosing_the_browser_decides_then_the_account(client, owner, asked, shown):
    sign_in(client, owner)
    assert _lang(client.get(OVERVIEW, headers={"Accept-Language": asked})) == shown


def test_a_portuguese_account_reads_european_portuguese_by_default(app, client):
    member = factories.make_member(app, factories.make_account(app, "Loja Lisboa", "PT"))
    sign_in(client, member)
    assert _lang(client.get(OVERVIEW, headers={"Accept-Language": "pt"})) == "pt-PT"
    page = client.get(OVERVIEW, headers={"Accept-Language": "de"})
    assert _lang(page) == "pt-PT" and "Idioma" in page.get_data(as_text=True)


def test_the_members_choice_wins_on_every_browser(app, client, owner):
    sign_in(client, owner)
    response = _choose(client, "pt_PT")
    assert response.status_code == 303 and response.headers["Location"] == "/dashboard/payments"
    page = client.get(OVERVIEW, headers={"Accept-Language": "en"})
    assert _lang(page) == "pt-PT" and '<option selected value="pt_PT">' in page.get_data(
        as_text=True
    )
    with app.app_context():
        assert db.session.get(User, owner.user_id).locale == "pt_PT"
    other_browser = app.test_client()
    sign_in(other_browser, owner)
    assert _lang(other_browser.get(OVERVIEW)) == "pt-PT"
    _choose(client, "en")
    assert _lang(client.get(OVERVIEW, headers={"Accept-Language": "pt-BR"})) == "en"


@pytest.mark.parametrize(
    "elsewhere", ["//attacker.example/x", "https://attacker.example/", "/\\attacker.example"]
)
def test_choosing_returns_only_to_a_page_of_this_site(client, owner, elsewhere):
    sign_in(client, owner)
    response = _choose(client, "pt_BR", next_page=elsewhere)
    assert response.status_code == 303 and response.headers["Location"] == OVERVIEW


def test_a_language_not_offered_is_refused_and_nothing_changes(app, client, owner):
    sign_in(client, owner)
    response = _choose(client, "fr_FR")
    assert response.status_code == 400
    with app.app_context():
        assert db.session.get(User, owner.user_id).locale is None


def test_choosing_needs_a_signed_in_person(client):
    response = post_form(client, "/dashboard/login", "/dashboard/language", {"locale": "pt_BR"})
    assert response.status_code == 302 and "/dashboard/login" in response.headers["Location"]


def test_the_checkout_follows_the_payers_browser_not_a_signed_in_member(app, client, owner):
    sign_in(client, owner)
    _choose(client, "pt_PT")
    charge = created(client, factories.make_api_key(app, owner.account_id))
    path = urlparse(charge["checkout_url"]).path
    assert _lang(client.get(path, headers={"Accept-Language": "en"})) == "en"
    assert _lang(client.get(path, headers={"Accept-Language": ""})) == "pt-BR"
