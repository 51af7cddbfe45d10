"""The old charges pages, now redirects to the payments pages with equivalent filters (status,
page size, cursor → page), and the test Pix charge form, which lives on the payments page."""

import html
import re
import uuid

import sqlalchemy as sa

from app.extensions import db
from app.models import KeyMode, Role, Transaction
from tests.support import factories
from tests.support.dashboard import post_form, sign_in
from tests.support.http import count_rows, csrf_token

PAGE = "/dashboard/charges"
PAYMENTS = "/dashboard/payments"


def _api_charge(client, key: str, **body) -> dict:
    response = client.post(
        "/v1/charges",
        json={"amount": 12345, "payment_method": "pix", **body},
        headers={"apikey": key, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 201, response.json
    return response.json


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _link(page: str, label: str) -> str:
    match = re.search(rf'<a href="([^"]+)">{label}</a>', page)
    assert match, f"no {label!r} link"
    return match.group(1)


def _charge_rows(page: str) -> list[str]:
    return re.findall(r"/dashboard/payments/(ch_[0-9a-f-]+)\?", page)


def _redirected(client, path: str) -> str:
    """Where an old charges address sends the browser (permanently)."""
    response = client.get(path)
    assert response.status_code == 301, path
    return response.headers["Location"]


def _form(client, **fields) -> dict:
    """The test charge form as rendered (its idempotency key), with `fields` filled in."""
    page = client.get(PAYMENTS).get_data(as_text=True)
    key = re.search(
        r'id="charge-idempotency_key" name="idempotency_key" type="hidden" value="([0-9a-f]+)"',
        page,
    ).group(1)
    return {"csrf_token": csrf_token(page), "idempotency_key": key, **fields}


def test_the_charges_page_is_now_the_payments_page(client, owner):
    sign_in(client, owner)
    assert _redirected(client, PAGE) == f"{PAYMENTS}?mode=test"
    page = client.get(PAGE, follow_redirects=True)
    assert page.status_code == 200
    text = _text(page)
    assert '<a href="/dashboard/payments" aria-current="page">Payments</a>' in text
    assert ">Charges</a>" not in text
    assert "No test payments yet. Create one with the form above" in text
    assert "New test Pix charge" in text
    assert '<label for="charge-amount">' in text and '<label for="status-filter">' in text
    assert 'aria-current="page">Test mode</a>' in text


def test_lists_a_charge_created_through_the_api(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge = _api_charge(client, key, description="Pedido 42", customer={"name": "Ana Souza"})
    sign_in(client, owner)
    text = _text(client.get(PAGE, follow_redirects=True))
    assert "R$123.45" in text and "Ana Souza" in text
    assert 'class="badge status-pending">Waiting for payment<' in text
    assert f"/dashboard/payments/{charge['id']}?mode=test" in text
    assert "(America/Sao_Paulo)" in text
    assert "Pedido 42" in _text(client.get(f"{PAGE}/{charge['id']}", follow_redirects=True))


def test_live_mode_shows_live_charges_only_and_no_test_form(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    _api_charge(client, key)
    sign_in(client, owner)
    assert _redirected(client, f"{PAGE}?mode=live") == f"{PAYMENTS}?mode=live"
    text = _text(client.get(f"{PAGE}?mode=live", follow_redirects=True))
    assert "R$123.45" not in text
    assert "No live payments yet" in text
    assert "New test Pix charge" not in text and "New test payment" not in text
    assert 'aria-current="page">Live mode</a>' in text


def test_status_limit_and_cursor_become_the_payments_filters_and_page(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    pending = [_api_charge(client, key)["id"] for _ in range(3)]
    paid = _api_charge(client, key)["id"]
    client.post(f"/v1/sandbox/charges/{paid}/pay", headers={"apikey": key})
    sign_in(client, owner)

    location = _redirected(client, f"{PAGE}?status=pending&limit=2")
    assert location == f"{PAYMENTS}?mode=test&status=WAITING_PAYMENT&limit=2"
    first = _text(client.get(location))
    assert '<option value="WAITING_PAYMENT" selected>' in first
    assert _charge_rows(first) == pending[::-1][:2]
    next_link = _link(first, "Next page")
    assert "status=WAITING_PAYMENT" in next_link and "limit=2" in next_link
    assert "mode=test" in next_link and "page=2" in next_link
    assert "First page" not in first

    # The old cursor (after the second newest) lands on the page holding the next charge.
    after = _redirected(client, f"{PAGE}?status=pending&limit=2&starting_after={pending[1]}")
    assert after == f"{PAYMENTS}?mode=test&status=WAITING_PAYMENT&limit=2&page=2"
    second = _text(client.get(after))
    assert _charge_rows(second) == [pending[0]]
    assert "Next page" not in second
    assert "status=WAITING_PAYMENT" in _link(second, "First page")
    newest = _redirected(client, f"{PAGE}?limit=1&starting_after={paid}")
    assert newest == f"{PAYMENTS}?mode=test&limit=1&page=2"
    assert _charge_rows(_text(client.get(newest))) == [pending[2]]

    assert _redirected(client, f"{PAGE}?status=paid") == f"{PAYMENTS}?mode=test&status=PAID"
    assert _charge_rows(_text(client.get(f"{PAGE}?status=paid", follow_redirects=True))) == [paid]
    assert len(_charge_rows(_text(client.get(PAGE, follow_redirects=True)))) == 4


def test_each_public_status_maps_to_a_transaction_status(client, owner):
    sign_in(client, owner)
    expected = {
        "pending": "WAITING_PAYMENT",
        "processing": "PROCESSING",
        "paid": "PAID",
        "failed": "REFUSED",
        "cancelled": "CANCELLED",
        "expired": "EXPIRED",
        "refunded": "REFUNDED",
        "disputed": "DISPUTE",
    }
    for public, status in expected.items():
        location = _redirected(client, f"{PAGE}?status={public}&mode=live")
        assert location == f"{PAYMENTS}?mode=live&status={status}", public
        assert client.get(location).status_code == 200


def test_nonsense_filters_are_400(client, owner):
    sign_in(client, owner)
    for query in ("status=PAID", "status=bogus", "mode=prod", "limit=0", "limit=x"):
        assert client.get(f"{PAGE}?{query}").status_code == 400, query
    response = client.get(f"{PAGE}?starting_after=nope")
    assert response.status_code == 400
    assert "starting_after" in _text(response)


def test_detail_shows_the_public_charge_qr_code_and_checkout_link(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge = _api_charge(
        client,
        key,
        description="Pedido 42",
        customer={"name": "Ana", "email": "ana@example.com"},
        expected_payer_tax_id="52998224725",
        metadata={"order": "42"},
    )
    sign_in(client, owner)
    location = _redirected(client, f"{PAGE}/{charge['id']}?mode=test")
    assert location == f"{PAYMENTS}/{charge['id']}?mode=test"
    page = client.get(location)
    assert page.status_code == 200
    text = _text(page)
    assert charge["id"] in text and "R$123.45" in text and "Pedido 42" in text
    assert "ana@example.com" in text and "529.982.247-25" in text
    qr = re.search(r'<img class="qr" src="(/v1/pix/locations/[0-9a-f]+/qr\.png)"', text)
    assert qr and client.get(qr.group(1)).mimetype == "image/png"
    assert f'value="{charge["pix"]["br_code"]}"' in text
    assert 'data-copy-target="br-code"' in text and '<label for="br-code">' in text
    assert f'href="{charge["checkout_url"]}"' in text
    assert ">order</dt><dd>42</dd>" in text
    assert "sandbox" not in text.lower().split("<main", 1)[1]  # no provider name
    raw = charge["id"].removeprefix("ch_")
    raw_page = client.get(f"{PAGE}/{raw}", follow_redirects=True)  # raw id, default test mode
    assert raw_page.status_code == 200 and charge["id"] in _text(raw_page)


def test_detail_shows_the_settlement_of_a_paid_charge(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    charge = _api_charge(client, key)
    paid = client.post(f"/v1/sandbox/charges/{charge['id']}/pay", headers={"apikey": key}).json
    sign_in(client, owner)
    text = _text(client.get(f"{PAGE}/{charge['id']}", follow_redirects=True))
    assert 'class="badge status-paid">Paid<' in text
    assert paid["settlement"]["end_to_end_id"] in text


def test_a_charge_the_provider_refused_shows_why(app, client, owner):
    """The sandbox refuses R$503.00 on purpose: the form still lands on the (failed) charge."""
    sign_in(client, owner)
    response = client.post(PAGE, data=_form(client, amount="503,00"))
    assert response.status_code == 303
    text = _text(client.get(response.headers["Location"]))
    assert 'class="badge status-failed">Refused<' in text and "Why it failed:" in text
    assert "Pix copy and paste" not in text


def test_detail_of_another_account_or_mode_is_404(app, client, owner):
    stranger = factories.make_account(app, "Alheia")
    foreign = _api_charge(client, factories.make_api_key(app, stranger))
    mine = _api_charge(client, factories.make_api_key(app, owner.account_id))
    sign_in(client, owner)
    for path in (f"{foreign['id']}", f"{mine['id']}?mode=live", "ch_missing"):
        assert client.get(f"{PAGE}/{path}", follow_redirects=True).status_code == 404, path


def test_test_charge_form_creates_a_charge_and_shows_it(app, client, owner):
    sign_in(client, owner)
    response = client.post(
        PAGE, data=_form(client, amount="12,34", description="Camiseta", customer_name="Ana")
    )
    assert response.status_code == 303
    location = response.headers["Location"]
    assert re.fullmatch(r"/dashboard/payments/ch_[0-9a-f-]+\?mode=test", location)
    with app.app_context():
        charge = db.session.scalar(sa.select(Transaction))
        assert charge.amount == 1234
        assert charge.mode is KeyMode.TEST
        assert charge.account_id == owner.account_id
        assert charge.customer_name == "Ana"
        assert charge.metadata_["description"] == "Camiseta"
    detail = _text(client.get(location))
    assert "Test charge created" in detail and "R$12.34" in detail and "Camiseta" in detail


def test_amount_with_a_point_is_accepted_too(app, client, owner):
    sign_in(client, owner)
    assert client.post(PAGE, data=_form(client, amount="12.3")).status_code == 303
    with app.app_context():
        assert db.session.scalar(sa.select(Transaction.amount)) == 1230


def test_invalid_amounts_are_refused_and_nothing_is_created(app, client, owner):
    sign_in(client, owner)
    cases = {
        "0": "Enter an amount greater than zero.",
        "abc": "Enter an amount in reais, like 12,34.",
        "1,234": "Use at most two decimal places",
        "": "Enter an amount in reais",
        "-5": "Enter an amount in reais",
    }
    for amount, message in cases.items():
        response = client.post(PAGE, data=_form(client, amount=amount))
        assert response.status_code == 400, amount
        text = _text(response)
        assert message in text, amount
        assert 'aria-invalid="true"' in text
        assert f'value="{amount}"' in text  # what was typed is shown back
    assert count_rows(app, Transaction) == 0


def test_service_rules_show_as_form_errors(app, client, owner):
    """A payer lock without a customer name is the service's rule, shown beside the field."""
    sign_in(client, owner)
    response = client.post(
        PAGE, data=_form(client, amount="10", expected_payer_tax_id="52998224725")
    )
    assert response.status_code == 400
    text = _text(response)
    assert "customer.name is required when expected_payer_tax_id is set." in text
    assert 'id="charge-customer_name-error"' in text
    response = client.post(PAGE, data=_form(client, amount="10", customer_document="123"))
    assert response.status_code == 400
    assert 'id="charge-customer_document-error"' in _text(response)
    response = client.post(PAGE, data=_form(client, amount="10", expires_in="30"))
    assert response.status_code == 400
    assert "expires_in is at least 60 seconds." in _text(response)
    assert count_rows(app, Transaction) == 0


def test_a_refused_form_can_be_sent_again_with_the_same_key(app, client, owner):
    """The key of a failed attempt is released, so fixing the form and resending works."""
    sign_in(client, owner)
    data = _form(client, amount="10", expected_payer_tax_id="52998224725")
    assert client.post(PAGE, data=data).status_code == 400
    assert client.post(PAGE, data={**data, "customer_name": "Ana"}).status_code == 303
    assert count_rows(app, Transaction) == 1


def test_double_submit_creates_one_charge(app, client, owner):
    sign_in(client, owner)
    data = _form(client, amount="50", description="Pedido 7")
    first = client.post(PAGE, data=data)
    second = client.post(PAGE, data=data)
    assert first.status_code == second.status_code == 303
    assert first.headers["Location"] == second.headers["Location"]
    assert count_rows(app, Transaction) == 1


def test_same_key_with_other_values_is_refused_without_a_second_charge(app, client, owner):
    sign_in(client, owner)
    data = _form(client, amount="50")
    assert client.post(PAGE, data=data).status_code == 303
    response = client.post(PAGE, data={**data, "amount": "60"})
    assert response.status_code == 409
    assert "already sent with other values" in _text(response)
    assert data["idempotency_key"] not in _text(response)  # a fresh key for the next try
    assert count_rows(app, Transaction) == 1


def test_a_member_may_create_test_charges(app, client, owner):
    member = factories.make_member(app, owner.account_id, Role.MEMBER)
    sign_in(client, member)
    assert "New test Pix charge" in _text(client.get(PAYMENTS))
    assert client.post(PAGE, data=_form(client, amount="1")).status_code == 303
    assert count_rows(app, Transaction) == 1


def test_form_needs_its_csrf_token(app, client, owner):
    sign_in(client, owner)
    data = _form(client, amount="1")
    del data["csrf_token"]
    assert client.post(PAGE, data=data).status_code == 400
    assert count_rows(app, Transaction) == 0


def test_pages_need_a_signed_in_member(client):
    for path in (PAGE, f"{PAGE}/ch_anything", PAYMENTS):
        response = client.get(path)
        assert response.status_code == 302
        assert "/dashboard/login" in response.headers["Location"]
    assert post_form(client, "/dashboard/login", PAGE, {"amount": "1"}).status_code == 302
