"""The hosted checkout on a phone (issue 21): a payer opens it at 390 px wide, in Brazilian
Portuguese, and every check a page must pass holds there too (`pages.page_problems`: no
horizontal scroll, no table past its card, a label on every field, one h1…), for a Pix
charge with its QR code and copy-paste code, and for a card payment's page."""

import pytest

from app.models import Role
from tests.browser.conftest import SCREENSHOTS, expect, run_jobs
from tests.browser.pages import BrowserLog, page_problems
from tests.support import charges, factories
from tests.support.payments import created

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(open_page):
    return open_page("phone", viewport=PHONE, locale="pt-BR", is_mobile=True, has_touch=True)


def _merchant(app):
    owner = factories.make_member(
        app, factories.make_account(app, "Padaria e Confeitaria Pão de Mel Ltda"), Role.OWNER
    )
    return factories.make_api_key(app, owner.account_id)


def test_a_pix_checkout_fits_a_phone(app, client, phone):
    api_key = _merchant(app)
    charge = charges.created(
        client, api_key, description="Encomenda de bolo de aniversário com cobertura de brigadeiro"
    )
    log = BrowserLog(app).listen(phone)
    phone.goto(f"/checkout/{charge['id'].removeprefix('ch_')}")
    expect(phone.get_by_role("heading", name="Pagar com Pix")).to_be_visible()
    assert page_problems(phone, log, SCREENSHOTS / "pt_BR" / "checkout-phone.png") == []


def test_a_card_payments_page_fits_a_phone(app, redis, client, phone):
    api_key = _merchant(app)
    payment = created(
        client,
        api_key,
        paymentMethods=["CREDIT_CARD"],
        currency="EUR",
        metadata={"returnUrl": "https://loja.example.pt/obrigado"},
    )
    run_jobs(app, redis)
    log = BrowserLog(app).listen(phone)
    phone.goto(f"/checkout/{payment['id'].removeprefix('tx_')}/card")
    assert page_problems(phone, log, SCREENSHOTS / "pt_BR" / "checkout-card-phone.png") == []
