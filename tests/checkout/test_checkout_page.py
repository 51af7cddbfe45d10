"""The hosted checkout page through HTTP: what a payer sees, the status it polls, the test-mode
payment button, and the states after payment, expiry and a failed creation."""

import re
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import KeyMode, Refund, Transaction
from tests.support import factories
from tests.support.http import count_rows, csrf_token

MERCHANT = "Padaria Sol"
CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
FAILING_AMOUNT = 50300


@pytest.fixture
def merchant(app):
    account_id = factories.make_account(app, MERCHANT)
    return account_id, factories.make_api_key(app, account_id)


def _create(client, key: str, **body) -> dict:
    payload = {
        "amount": 12345,
        "payment_method": "pix",
        "description": "Pedido 42",
        "customer": CUSTOMER,
        **body,
    }
    response = client.post(
        "/v1/charges",
        json=payload,
        headers={"apikey": key, "Idempotency-Key": f"checkout-{uuid.uuid4().hex}"},
    )
    assert response.status_code == 201, response.json
    return response.json


def _page(charge: dict) -> str:
    return urlparse(charge["checkout_url"]).path


def _html(client, charge: dict) -> str:
    response = client.get(_page(charge))
    assert response.status_code == 200
    return response.get_data(as_text=True)


def _visible_states(html: str) -> set[str]:
    return {
        state for state, hidden in re.findall(r'data-state="(\w+)"(\s+hidden)?', html) if not hidden
    }


def _simulate(client, charge: dict, token: str | None):
    data = {"csrf_token": token} if token else {}
    return client.post(f"{_page(charge)}/simulate-payment", data=data)


def _set_row(app, charge: dict, **values) -> None:
    with app.app_context():
        db.session.execute(
            sa.update(Transaction)
            .where(Transaction.id == charge["id"].removeprefix("ch_"))
            .values(**values)
        )
        db.session.commit()


def test_page_shows_what_a_payer_needs(client, merchant):
    _, key = merchant
    charge = _create(client, key)
    response = client.get(_page(charge))
    html = response.get_data(as_text=True)

    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert "Content-Security-Policy" in response.headers
    assert response.headers["Cache-Control"] == "no-store"
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert "R$123.45" in html
    assert MERCHANT in html
    assert "Pedido 42" in html
    location = urlparse(charge["pix"]["qr_code_url"]).path
    assert f'<img class="qr" src="{location}"' in html
    assert f'value="{charge["pix"]["br_code"]}" readonly' in html
    assert 'data-copy-target="pix-code"' in html and ">Copy</button>" in html
    assert f'data-expires-at="{charge["pix"]["expires_at"]}"' in html
    assert f'data-status-url="{_page(charge)}/status"' in html
    assert 'aria-live="polite"' in html
    assert "/static/checkout.js" in html and "/static/checkout.css" in html
    assert "<script>" not in html
    assert _visible_states(html) == {"pending"}
    assert "Test mode" in html and "Simulate payment" in html


def test_page_reveals_no_customer_or_internal_data(client, merchant):
    account_id, key = merchant
    charge = _create(client, key, expected_payer_tax_id=CUSTOMER["document"])
    html = _html(client, charge)

    for secret in (
        CUSTOMER["document"],
        CUSTOMER["email"],
        CUSTOMER["name"],
        charge["pix"]["txid"],
        account_id,
        charge["id"],
    ):
        assert secret not in html


def test_status_answers_three_fields(client, merchant):
    _, key = merchant
    charge = _create(client, key, expires_in=600)
    response = client.get(f"{_page(charge)}/status")

    assert response.status_code == 200
    assert set(response.json) == {"status", "expires_at", "seconds_left"}
    assert response.json["status"] == "pending"
    assert response.json["expires_at"] == charge["pix"]["expires_at"]
    assert 590 <= response.json["seconds_left"] <= 600


def test_unknown_charge_is_an_html_404(client):
    response = client.get(f"/checkout/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert "Back to the dashboard" not in response.get_data(as_text=True)  # a payer sees it
    assert client.get(f"/checkout/{uuid.uuid4()}/status").status_code == 404


def test_charge_id_with_its_prefix_is_not_a_checkout_address(client, merchant):
    _, key = merchant
    charge = _create(client, key)
    assert client.get(f"/checkout/{charge['id']}").status_code == 404


def test_simulated_payment_pays_the_charge(client, merchant):
    _, key = merchant
    charge = _create(client, key)
    token = csrf_token(_html(client, charge))

    response = _simulate(client, charge, token)

    assert response.status_code == 303
    assert urlparse(response.headers["Location"]).path == _page(charge)
    assert client.get(f"{_page(charge)}/status").json == {
        "status": "paid",
        "expires_at": charge["pix"]["expires_at"],
        "seconds_left": 0,
    }
    paid = client.get(f"/v1/charges/{charge['id']}", headers={"apikey": key}).json
    assert paid["status"] == "paid"
    html = _html(client, charge)
    assert _visible_states(html) == {"paid"}
    assert "Payment received" in html
    assert "Simulate payment" not in html and 'class="qr"' not in html
    assert charge["pix"]["br_code"] not in html
    assert paid["settlement"]["end_to_end_id"] not in html


def test_a_second_simulation_of_a_paid_charge_changes_nothing(app, client, merchant):
    _, key = merchant
    charge = _create(client, key)
    token = csrf_token(_html(client, charge))
    assert _simulate(client, charge, token).status_code == 303

    again = _simulate(client, charge, token)

    assert again.status_code == 303
    assert client.get(f"{_page(charge)}/status").json["status"] == "paid"
    assert count_rows(app, Refund) == 0


def test_simulation_without_csrf_token_is_refused(client, merchant):
    _, key = merchant
    charge = _create(client, key)
    _html(client, charge)

    assert _simulate(client, charge, None).status_code == 400
    assert client.get(f"{_page(charge)}/status").json["status"] == "pending"


def test_simulation_of_an_unknown_charge_is_404(client, merchant):
    _, key = merchant
    token = csrf_token(_html(client, _create(client, key)))
    response = client.post(f"/checkout/{uuid.uuid4()}/simulate-payment", data={"csrf_token": token})
    assert response.status_code == 404


def test_live_charge_cannot_be_simulated(app, client, merchant):
    _, key = merchant
    token = csrf_token(_html(client, _create(client, key)))
    live = _create(client, key)
    _set_row(app, live, mode=KeyMode.LIVE)

    html = _html(client, live)
    assert "Test mode" not in html and "Simulate payment" not in html
    assert _visible_states(html) == {"pending"}
    assert _simulate(client, live, token).status_code == 404
    assert client.get(f"{_page(live)}/status").json["status"] == "pending"


def test_expired_charge_asks_for_a_new_one(app, client, merchant):
    _, key = merchant
    charge = _create(client, key, expires_in=60)
    _set_row(app, charge, expires_at=datetime.now(UTC) - timedelta(minutes=1))

    html = _html(client, charge)

    assert _visible_states(html) == {"expired"}
    assert "This charge has expired" in html and "new charge" in html
    assert 'class="qr"' not in html and charge["pix"]["br_code"] not in html
    assert "Simulate payment" not in html
    status = client.get(f"{_page(charge)}/status").json
    assert status["status"] == "expired" and status["seconds_left"] == 0


def test_failed_charge_renders_a_message_without_a_code(client, merchant):
    _, key = merchant
    charge = _create(client, key, amount=FAILING_AMOUNT)
    assert charge["status"] == "failed"

    html = _html(client, charge)

    assert _visible_states(html) == {"failed"}
    assert "R$503.00" in html and "could not be created" in html
    assert 'class="qr"' not in html and 'id="pix-code"' not in html
    assert client.get(f"{_page(charge)}/status").json == {
        "status": "failed",
        "expires_at": None,
        "seconds_left": 0,
    }


def test_qr_image_on_the_page_is_served(client, merchant):
    _, key = merchant
    html = _html(client, _create(client, key))
    src = re.search(r'<img class="qr" src="([^"]+)"', html).group(1)

    image = client.get(src)

    assert image.status_code == 200
    assert image.mimetype == "image/png"
    assert image.data.startswith(b"\x89PNG")
