"""The search box on the payments, disputes and payouts lists, through the dashboard: it finds
what a finance person remembers, keeps its words in the box, travels with the other filters
into the pages and the CSV export, and never reaches another account's records."""

import csv
import html
import io
from urllib.parse import urlencode

from app.models import Role
from tests.support import charges, factories, payouts
from tests.support import disputes as d
from tests.support.dashboard import sign_in

CPF = "52998224725"


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    return html.unescape(response.get_data(as_text=True))


def _csv_ids(response) -> set[str]:
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    return {row[0] for row in rows[1:]}


def test_payments_are_found_by_order_name_and_document_and_exported_so(app, client):
    member = factories.make_member(app)
    key = factories.make_api_key(app, member.account_id)
    ana = charges.created(
        client, key, description="Pedido 1042", customer={"name": "Ana Souza", "document": CPF}
    )
    bruno = charges.created(client, key, description="Pedido 77", customer={"name": "Bruno"})
    elsewhere = factories.make_api_key(app, factories.make_account(app, "Outra Loja"))
    stranger = charges.created(client, elsewhere, description="Pedido 1042")
    sign_in(client, member)

    for typed in ("pedido 1042", "Souza", "529.982.247-25"):
        page = _text(client.get("/dashboard/payments?" + urlencode({"q": typed})))
        assert ana["id"] in page and bruno["id"] not in page and stranger["id"] not in page
        assert f'name="q" value="{typed}"' in page
    page = _text(client.get("/dashboard/payments?q=pedido"))
    assert ana["id"] in page and bruno["id"] in page
    assert "2 payments match these filters." in page

    assert "1 payment matches these filters." in _text(client.get("/dashboard/payments?q=souza"))
    export = client.get("/dashboard/payments/export.csv?q=souza")
    assert _csv_ids(export) == {ana["id"]}
    nothing = _text(client.get("/dashboard/payments?q=carla"))
    assert "No test payments match these filters." in nothing
    too_short = _text(client.get("/dashboard/payments?q=an"))
    assert ana["id"] in too_short and bruno["id"] in too_short  # no search at all


def test_disputes_are_found_by_payer_document_and_charge(app, client, monkeypatch):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    paid = d.paid_charge(app, client, shop)
    other = d.paid_charge(app, client, shop)
    case = d.opened(client, shop, paid["id"], payer_name="Ana Souza", payer_document=CPF)
    other_case = d.opened(client, shop, other["id"], payer_name="Bruno Lima")
    sign_in(client, factories.make_member(app, shop.member.account_id, Role.OWNER))

    for typed in ("ana souza", CPF, paid["id"]):
        page = _text(client.get("/dashboard/disputes?" + urlencode({"q": typed})))
        assert case["id"] in page and other_case["id"] not in page
    export = client.get("/dashboard/disputes/export.csv?q=bruno")
    assert _csv_ids(export) == {other_case["id"]}


def test_payouts_are_found_by_key_and_description(app, client, monkeypatch):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    rent = payouts.request(client, shop, amount=1_000, description="Aluguel de novembro")
    salary = payouts.request(client, shop, amount=2_000, pixKey="rh@padaria.com.br")
    rent_id, salary_id = rent.get_json()["id"], salary.get_json()["id"]
    sign_in(client, shop.member)

    page = _text(client.get("/dashboard/payouts?q=aluguel"))
    assert rent_id in page and salary_id not in page
    page = _text(client.get("/dashboard/payouts?q=rh%40padaria"))
    assert salary_id in page and rent_id not in page
    assert _csv_ids(client.get("/dashboard/payouts/export.csv?q=aluguel")) == {rent_id}
    assert "No test payouts here." in _text(client.get("/dashboard/payouts?q=nothing-like-it"))
