"""Every list's export comes in two sheets from the same link: the plain CSV (commas, minor
units, UTC) and the Planilha (Excel Brasil): a byte order mark, `;`, reais with a decimal
comma and São Paulo time, read back here the way Excel in Portuguese reads it."""

import codecs
import csv
import html
import io
import re
from datetime import datetime
from decimal import Decimal

import pytest

from app.models import Role
from tests.support import charges, factories, payouts
from tests.support import disputes as d
from tests.support.dashboard import sign_in

UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _planilha_link(page: str, export: str) -> str:
    links = re.findall(r'<a href="([^"]+)" download>', html.unescape(page))
    (link,) = [link for link in links if link.startswith(export) and "format=planilha" in link]
    return link


def _sheets(client, page_path: str, export: str) -> tuple[list[list[str]], list[list[str]]]:
    page = client.get(page_path).get_data(as_text=True)
    plain = client.get(export).get_data(as_text=True)
    response = client.get(_planilha_link(page, export))
    assert response.headers["Content-Disposition"].endswith('-planilha.csv"')
    raw = response.get_data()
    assert raw.startswith(codecs.BOM_UTF8)
    planilha = list(csv.reader(io.StringIO(raw.decode("utf-8-sig")), delimiter=";"))
    return list(csv.reader(io.StringIO(plain))), planilha


def _reais(cell: str) -> Decimal:
    assert re.fullmatch(r"-?\d+,\d\d", cell), cell
    return Decimal(cell.replace(",", "."))


def _sao_paulo(cell: str) -> datetime:
    return datetime.strptime(cell, "%d/%m/%Y %H:%M:%S")


@pytest.fixture
def shop(app, client, monkeypatch):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    sign_in(client, factories.make_member(app, shop.member.account_id, Role.OWNER))
    return shop


def test_the_payments_planilha_has_the_csvs_rows_in_brazilian_notation(client, shop):
    charges.created(client, shop.api_key, amount=123_456, description="Pedido 9")
    plain, planilha = _sheets(client, "/dashboard/payments", "/dashboard/payments/export.csv")
    assert planilha[0] == plain[0] and len(planilha) == len(plain)
    amount = plain[0].index("amount")
    created = plain[0].index("created_at")
    newest_plain, newest = plain[1], planilha[1]
    assert newest_plain[amount] == "123456" and _reais(newest[amount]) == Decimal("1234.56")
    assert UTC_TIME.fullmatch(newest_plain[created])
    assert _sao_paulo(newest[created])


def test_the_disputes_and_payouts_planilhas_too(app, client, shop):
    paid = d.paid_charge(app, client, shop)
    d.opened(client, shop, paid["id"])
    assert payouts.request(client, shop, amount=1_050).status_code == 201

    plain, planilha = _sheets(client, "/dashboard/disputes", "/dashboard/disputes/export.csv")
    amount = plain[0].index("amount")
    assert _reais(planilha[1][amount]) == Decimal(plain[1][amount]) / 100

    plain, planilha = _sheets(client, "/dashboard/payouts", "/dashboard/payouts/export.csv")
    for column in ("amount", "fee", "wallet_debit"):
        at = plain[0].index(column)
        assert _reais(planilha[1][at]) == Decimal(plain[1][at]) / 100
    assert _sao_paulo(planilha[1][plain[0].index("created_at")])
