"""The checkout of a charge with a due date shows what the payer owes today, with its parts,
in the payer's language: the original amount, the discount or the fine and interest, and the
total the Pix must carry."""

from datetime import datetime
from urllib.parse import urlparse

import pytest
import time_machine

from app.business_days import SAO_PAULO
from tests.support import factories
from tests.support.charges import CPF, created

DUE = {
    "date": "2026-12-10",
    "days_valid_after": 5,
    "fine": {"type": "percent", "value": 2},
    "interest": {"type": "percent_month", "value": 1},
    "discounts": [{"until": "2026-12-05", "type": "percent", "value": 5}],
}


@pytest.fixture
def checkout_path(app, client) -> str:
    api_key = factories.make_api_key(app, factories.make_account(app, "Escola Sol", country="BR"))
    with time_machine.travel(datetime(2026, 12, 1, 9, tzinfo=SAO_PAULO), tick=False):
        charge = created(
            client,
            api_key,
            amount=100_000,
            customer={"name": "Ana Souza", "document": CPF},
            due=DUE,
        )
    return urlparse(charge["checkout_url"]).path


def _page(client, path: str, day: int, language: str) -> str:
    with time_machine.travel(datetime(2026, 12, day, 12, tzinfo=SAO_PAULO), tick=False):
        response = client.get(path, headers={"Accept-Language": language})
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_a_late_payer_sees_the_fine_and_interest_in_portuguese(client, checkout_path):
    html = _page(client, checkout_path, 15, "pt-BR")
    assert "<dt>Vencimento</dt><dd>10/12/2026</dd>" in html
    assert "Valor original" in html and "R$\u00a01.000,00" in html
    assert "Multa por atraso" in html and "R$\u00a020,00" in html
    # 1 % a month for 5 days of R$ 1.000,00 = R$ 1,67
    assert "Juros" in html and "R$\u00a01,67" in html
    assert "Total hoje" in html and "R$\u00a01.021,67" in html
    assert "Desconto" not in html


def test_an_early_payer_sees_the_discount_in_english(client, checkout_path):
    html = _page(client, checkout_path, 3, "en")
    assert "Discount for paying early" in html and "R$50.00" in html
    assert "Total today" in html and "R$950.00" in html
    assert "Late fine" not in html
