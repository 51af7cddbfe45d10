"""A filtered payments list says what it adds up to: how many match, and per currency the
received gross, the fees and the net, from the same rows the list and its export read."""

import html
import re

from app.extensions import db
from app.models import Transaction
from tests.support import charges, factories
from tests.support.dashboard import sign_in


def _text(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.get_data(as_text=True))


def test_the_filtered_set_shows_its_count_gross_fees_and_net(app, client):
    member = factories.make_member(app)
    key = factories.make_api_key(app, member.account_id)
    paid = charges.created(client, key, amount=10_000, description="Pedido A")
    charges.created(client, key, amount=5_000, description="Pedido B")
    charges.created(client, key, amount=7_000, description="Outra coisa")
    assert charges.pay(client, key, paid["id"]).status_code == 200
    with app.app_context():
        row = db.session.get(Transaction, paid["id"].removeprefix("ch_"))
        fees = row.provider_fee + row.platform_fee
    assert fees > 0
    sign_in(client, member)

    page = _text(client.get("/dashboard/payments?q=pedido"))

    assert "2 payments match these filters." in page
    sums = re.search(r"<td>BRL</td>\s*<td>(.*?)</td>" + r"\s*<td[^>]*>(.*?)</td>" * 3, page)
    assert sums, page
    assert sums.groups() == (
        "1 of 2",
        "R$100.00",
        f"R${fees / 100:.2f}",
        f"R${(10_000 - fees) / 100:,.2f}",
    )
    unfiltered = _text(client.get("/dashboard/payments"))
    assert "match these filters" not in unfiltered  # the whole history: the statement's job
