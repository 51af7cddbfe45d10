"""What the live PSP reported reaches a person: staff see the back office's Live PSP page
(notices of unconfirmed, unmatched or unknown reports, and the PSP's refusals with its own
words), resolve a notice, and the PSP reporting it again reopens it; `/metrics` counts the open
ones for alerting. Through HTTP, from a forged webhook to the page."""

import re

import pytest

from app.models import Role
from app.models.base import utcnow
from app.pix.identifiers import new_end_to_end_id
from app.providers.api_pix.mapping import txid_for, valor
from app.services import accounts
from tests.ops.scraping import sample, scrape
from tests.support import factories
from tests.support.charges import created, raw
from tests.support.dashboard import post_form, sign_in
from tests.support.fake_api_pix import RECEIVER_KEY

PAGE = "/dashboard/back-office/psp"
SECRET = "s3cr3t-path-token-0123456789abcdef"


@pytest.fixture
def staff(app):
    with app.app_context():
        user = accounts.add_user("ops@acmepay.example.com", factories.PASSWORD, is_staff=True)
        accounts.db.session.commit()
        return factories.Member(user.id, "", user.email, Role.MEMBER)


@pytest.fixture
def webhook(app, monkeypatch, live):
    monkeypatch.setitem(app.config, "API_PIX_WEBHOOK_SECRET", SECRET)
    return f"/v1/api-pix/webhook/{SECRET}/pix"


def forged(charge: dict) -> dict:
    return {
        "endToEndId": new_end_to_end_id("87654321", utcnow()),
        "txid": txid_for(raw(charge["id"])),
        "valor": valor(charge["amount"]),
        "chave": RECEIVER_KEY,
        "horario": utcnow().isoformat().replace("+00:00", "Z"),
    }


def open_notices(api) -> float:
    return sample(scrape(api), "acme_psp_notices_open", kind="unconfirmed_pix")


def test_staff_see_a_forged_webhook_and_a_refusal_and_resolve_the_notice(
    app, api, merchant, live, webhook, staff, monkeypatch
):
    charge = created(api, merchant.api_key)
    pix = forged(charge)
    assert api.post(webhook, json={"pix": [pix]}).status_code == 200
    monkeypatch.setitem(app.config, "API_PIX_RECEIVER_PIX_KEY", "ana@example.com")
    refused = created(api, merchant.api_key, amount=777)
    assert refused["status"] == "failed"
    assert open_notices(api) == 1

    sign_in(api, staff)
    page = api.get(PAGE).get_data(as_text=True)

    assert '<a href="/dashboard/back-office/psp" aria-current="page">Live PSP</a>' in page
    assert "Webhook not confirmed by the PSP" in page and pix["endToEndId"] in page
    assert "the PSP has no such Pix" in page
    assert refused["id"] in page and "R$7.77" in page
    assert "A chave não pertence ao recebedor." in page
    notice_id = re.search(r"/dashboard/back-office/psp/([0-9a-f-]{36})/resolve", page).group(1)

    resolved = post_form(api, PAGE, f"{PAGE}/{notice_id}/resolve")

    listed = f'<span class="mono">{pix["endToEndId"]}</span>'
    assert resolved.status_code == 303
    assert listed not in api.get(PAGE).get_data(as_text=True)
    assert open_notices(api) == 0
    assert api.post(webhook, json={"pix": [pix]}).status_code == 200  # reported again
    assert listed in api.get(PAGE).get_data(as_text=True)
    assert open_notices(api) == 1


def test_only_staff_open_the_live_psp_page(app, api, owner):
    sign_in(api, owner)
    assert api.get(PAGE).status_code == 403
    assert api.post(f"{PAGE}/00000000-0000-0000-0000-000000000000/resolve").status_code in (
        400,
        403,
    )
