"""The wallets page: balances per currency, the statement with its running balance, and the
statement's CSV export; only the signed-in member's account, in the mode asked for."""

import codecs
import csv
import html
import io
import re
import uuid
from datetime import datetime
from decimal import Decimal

import pytest
import sqlalchemy as sa

from app.business_days import SAO_PAULO
from app.extensions import db
from app.formats.money import localized_money
from app.models import KeyMode, LedgerAccount, LedgerPosting, Role, Transaction
from app.services import ledger
from app.services.ledger import Line
from app.templating import local_time_element
from tests.support import factories
from tests.support.charges import created, pay
from tests.support.dashboard import sign_in
from tests.support.payouts import funded_merchant

PAGE = "/dashboard/wallets"
CSV = "/dashboard/wallets/statement.csv"
CSV_HEADER = [
    "created_at",
    "kind",
    "description",
    "available_change",
    "pending_change",
    "available_balance",
    "gross",
    "fee",
    "net",
]


@pytest.fixture
def merchant(app, client, monkeypatch):
    return funded_merchant(app, client, monkeypatch)


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _balances_column(page: str) -> list[str]:
    return re.findall(r'<td class="amount balance">([^<]+)</td>', page)


def _credit(app, account_id: str, amounts: list[int], mode=KeyMode.TEST, currency="BRL"):
    """Postings straight to the ledger (as the services book them), one per amount."""
    with app.app_context():
        for amount in amounts:
            ledger.post(
                account_id=account_id,
                mode=mode,
                currency=currency,
                kind="charge_settlement",
                reference_id=uuid.uuid4().hex,
                description=f"Credit of {amount}",
                lines=[
                    Line(LedgerAccount.AVAILABLE, amount),
                    Line(LedgerAccount.PROVIDER_CLEARING, -amount),
                ],
            )
        db.session.commit()
        assert ledger.check() == []


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def test_balances_and_the_statement_with_its_running_balance(client, merchant):
    sign_in(client, merchant.member)
    response = client.get(PAGE)
    assert response.status_code == 200
    text = _text(response)
    assert '<a href="/dashboard/wallets" aria-current="page">Wallets</a>' in text
    assert text.index(">Payments</a>") < text.index(">Wallets</a>") < text.index(">Payouts</a>")
    assert '<dt>Available</dt><dd class="amount figure">R$1,000.00</dd>' in text
    assert '<dt>Pending</dt><dd class="amount">R$0.00</dd>' in text
    assert '<dt>Total</dt><dd class="amount">R$1,000.00</dd>' in text
    assert "Nothing waiting for release" in text
    assert "Released to available" in text and "Payment received" in text
    assert "-R$1,000.00" in text  # the release leaves pending
    assert _balances_column(text) == ["R$1,000.00", "R$0.00"]  # newest first
    assert f'href="{CSV}?mode=test&amp;currency=BRL"' in response.get_data(as_text=True)


def test_next_release_shows_its_date_and_amount(app, client, merchant, monkeypatch):
    monkeypatch.setitem(app.config, "SETTLEMENT_HOLD", "3600s")
    pay(client, merchant.api_key, created(client, merchant.api_key, amount=5_000)["id"])
    balance = client.get("/v1/wallets/balance", headers={"apikey": merchant.api_key}).json
    sign_in(client, merchant.member)
    text = _text(client.get(PAGE))
    with app.app_context():  # a Brazilian account: São Paulo time
        at = local_time_element(datetime.fromisoformat(balance["next_release_at"]))
    assert f"R$50.00 on {at}" in text
    assert '<dt>Pending</dt><dd class="amount">R$50.00</dd>' in text
    assert '<dt>Total</dt><dd class="amount">R$1,050.00</dd>' in text
    assert _balances_column(text) == ["R$1,000.00", "R$1,000.00", "R$0.00"]


def test_the_statement_pages_keep_the_running_balance(app, client, owner):
    _credit(app, owner.account_id, [100] * 55)
    sign_in(client, owner)
    first = _text(client.get(PAGE))
    balances = _balances_column(first)
    assert len(balances) == 50
    assert (balances[0], balances[-1]) == ("R$55.00", "R$6.00")
    assert "Newer" not in first
    older = re.search(r'<a href="([^"]+)">Older</a>', first).group(1)
    assert "page=2" in older and "mode=test" in older and "currency=BRL" in older
    second = _text(client.get(older))
    assert _balances_column(second) == [f"R${n}.00" for n in range(5, 0, -1)]
    assert "Older</a>" not in second and "Newer</a>" in second
    assert "No more movements" in _text(client.get(f"{PAGE}?page=3"))


def test_the_csv_export_has_every_row_in_minor_units(app, client, owner):
    _credit(app, owner.account_id, [100] * 55 + [12_345])
    sign_in(client, owner)
    response = client.get(CSV)
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="statement-BRL-test.csv"'
    )
    rows = _csv(response)
    assert rows[0] == CSV_HEADER
    assert len(rows) == 1 + 56
    created_at, kind, description, *amounts = rows[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created_at)
    assert (kind, description, amounts) == (
        "charge_settlement",
        "Credit of 12345",
        ["12345", "0", "17845", "12345", "0", "12345"],
    )
    assert rows[-1][3:6] == ["100", "0", "100"]


def test_the_csv_of_a_funded_merchant_matches_the_ledger(client, merchant):
    sign_in(client, merchant.member)
    rows = _csv(client.get(CSV))
    assert [row[1] for row in rows[1:]] == ["settlement_release", "charge_settlement"]
    assert [row[3:6] for row in rows[1:]] == [["100000", "-100000", "100000"], ["0", "100000", "0"]]
    assert rows[2][2].startswith("Pix ") and "for charge ch_" in rows[2][2]


def test_mode_and_currency_choose_the_wallet(app, client, owner):
    _credit(app, owner.account_id, [111])
    _credit(app, owner.account_id, [222], mode=KeyMode.LIVE)
    _credit(app, owner.account_id, [333], currency="USD")
    sign_in(client, owner)

    live = client.get(f"{CSV}?mode=live")
    assert 'filename="statement-BRL-live.csv"' in live.headers["Content-Disposition"]
    assert [row[3:6] for row in _csv(live)[1:]] == [["222", "0", "222"]]
    usd = client.get(f"{CSV}?currency=usd")
    assert 'filename="statement-USD-test.csv"' in usd.headers["Content-Disposition"]
    assert [row[3:6] for row in _csv(usd)[1:]] == [["333", "0", "333"]]
    assert _csv(client.get(f"{CSV}?currency=EUR")) == [CSV_HEADER]

    test_page = _text(client.get(PAGE))
    assert "R$1.11" in test_page and "R$2.22" not in test_page
    assert "$3.33" in test_page  # the USD balance card
    assert '<a href="/dashboard/wallets?mode=test&currency=USD">USD statement</a>' in test_page
    live_page = _text(client.get(f"{PAGE}?mode=live"))
    assert 'aria-current="page">Live mode</a>' in live_page
    assert "R$2.22" in live_page and "R$1.11" not in live_page
    usd_page = _text(client.get(f"{PAGE}?currency=USD"))
    assert "USD statement" in usd_page and _balances_column(usd_page) == ["$3.33"]


def test_another_accounts_money_is_never_shown(app, client, owner):
    stranger = factories.make_account(app, "Alheia")
    _credit(app, stranger, [77_700])
    _credit(app, owner.account_id, [100])
    sign_in(client, owner)
    page = _text(client.get(PAGE))
    assert "R$777.00" not in page and "Credit of 77700" not in page
    assert _balances_column(page) == ["R$1.00"]
    assert "77700" not in client.get(CSV).get_data(as_text=True)


def test_an_empty_wallet_says_so(client, owner):
    sign_in(client, owner)
    text = _text(client.get(PAGE))
    assert '<dt>Available</dt><dd class="amount figure">R$0.00</dd>' in text
    assert "No movements in this wallet yet." in text
    assert _csv(client.get(CSV)) == [CSV_HEADER]


def test_a_member_may_read_the_wallets(app, client, merchant):
    member = factories.make_member(app, merchant.member.account_id, Role.MEMBER)
    sign_in(client, member)
    assert "R$1,000.00" in _text(client.get(PAGE))
    assert client.get(CSV).status_code == 200


def test_nonsense_arguments_are_400(client, owner):
    sign_in(client, owner)
    too_far = ("page=2147483648", "page=9223372036854775807", "page=" + "9" * 5000)
    for query in ("mode=prod", "currency=B1", "currency=BRL%22", "page=0", "page=x", *too_far):
        assert client.get(f"{PAGE}?{query}").status_code == 400, query
    for query in ("mode=prod", "currency=B1"):
        assert client.get(f"{CSV}?{query}").status_code == 400, query


def test_pages_need_a_signed_in_member(client):
    for path in (PAGE, CSV):
        response = client.get(path)
        assert response.status_code == 302
        assert "/dashboard/login" in response.headers["Location"]


def test_the_statement_names_refund_and_dispute_movements(app, client, shop):
    """A funded refund and a dispute's hold read as what they are, not as posting kinds."""
    payment_id = shop.paid_charge.removeprefix("ch_")
    refund = shop.api.post(
        f"/v1/payments/{payment_id}/refund",
        json={"idempotencyKey": uuid.uuid4().hex, "amount": 1_000},
        headers={"apikey": shop.merchant.api_key},
    )
    assert refund.status_code == 201 and refund.get_json()["pendingReason"] is None
    shop.open_case  # noqa: B018 - a dispute on another paid charge: its hold
    sign_in(client, shop.member(Role.OWNER))
    page = _text(client.get(f"{PAGE}?mode=test"))
    for label in ("Refund", "Dispute: amount held", "Payment received"):
        assert f"<td>{label}<br>" in page, label
    assert "refund_debit" not in page and "dispute_hold" not in page


def test_each_movement_shows_its_gross_fee_and_net(app, client, owner):
    api_key = factories.make_api_key(app, owner.account_id)
    charge = created(client, api_key, amount=10_000)
    pay(client, api_key, charge["id"])
    with app.app_context():
        paid = db.session.get(Transaction, charge["id"].removeprefix("ch_"))
        fee = paid.provider_fee + paid.platform_fee
    assert fee > 0
    sign_in(client, owner)

    page = _text(client.get(PAGE))
    assert '<th scope="col">Gross</th><th scope="col">Fee</th><th scope="col">Net</th>' in page
    assert '<td class="amount gross">R$100.00</td>' in page
    assert f'<td class="amount fee">{localized_money(fee, "BRL", "en")}</td>' in page
    assert f'<td class="amount net">{localized_money(10_000 - fee, "BRL", "en")}</td>' in page
    (row,) = _csv(client.get(CSV))[1:]
    assert row[6:] == ["10000", str(fee), str(10_000 - fee)]


def _dated_credits(app, account_id: str, days_and_amounts: list[tuple[str, int]]) -> None:
    """One credit per (São Paulo day, amount), booked in this order, dated noon of its day."""
    for day, amount in days_and_amounts:
        _credit(app, account_id, [amount])
        with app.app_context():
            posting = db.session.scalars(
                sa.select(LedgerPosting).order_by(LedgerPosting.created_at.desc()).limit(1)
            ).one()
            noon = datetime.fromisoformat(f"{day}T12:00:00").replace(tzinfo=SAO_PAULO)
            posting.created_at = noon
            db.session.commit()


def test_a_period_shows_its_movements_between_opening_and_closing_balances(app, client, owner):
    _dated_credits(
        app,
        owner.account_id,
        [("2026-11-01", 100), ("2026-11-02", 200), ("2026-11-03", 400), ("2026-11-04", 800)],
    )
    sign_in(client, owner)

    page = _text(client.get(f"{PAGE}?since=2026-11-02&until=2026-11-03"))
    assert _balances_column(page) == ["R$7.00", "R$3.00"]
    assert re.search(r"Opening balance \(02/11/2026, start of day\)</dt>\s*<dd[^>]*>R\$1.00<", page)
    assert re.search(r"Closing balance \(03/11/2026, end of day\)</dt>\s*<dd[^>]*>R\$7.00<", page)
    assert 'value="02/11/2026"' in page and 'value="03/11/2026"' in page
    link = re.search(r'<a href="([^"]+)" download>Download the statement of this period', page)
    rows = _csv(client.get(link.group(1)))[1:]  # the page's text is unescaped already
    assert [row[3] for row in rows] == ["400", "200"]

    whole = _text(client.get(PAGE))
    assert re.search(r"Opening balance</dt>\s*<dd[^>]*>R\$0.00<", whole)
    assert re.search(r"Closing balance</dt>\s*<dd[^>]*>R\$15.00<", whole)

    quiet = _text(client.get(f"{PAGE}?since=2026-11-10&until=2026-11-11"))
    assert "No movements in this period." in quiet
    assert re.search(r"Opening balance[^<]*</dt>\s*<dd[^>]*>R\$15.00<", quiet)
    assert re.search(r"Closing balance[^<]*</dt>\s*<dd[^>]*>R\$15.00<", quiet)
    assert _csv(client.get(f"{CSV}?since=2026-11-10&until=2026-11-11")) == [CSV_HEADER]


def test_a_period_starts_and_ends_at_midnight_in_sao_paulo(app, client, owner):
    _dated_credits(app, owner.account_id, [("2026-11-01", 100)])
    with app.app_context():  # 23:30 in São Paulo on the 1st is already the 2nd in UTC
        posting = db.session.scalars(sa.select(LedgerPosting)).one()
        posting.created_at = datetime(2026, 11, 1, 23, 30, tzinfo=SAO_PAULO)
        db.session.commit()
    sign_in(client, owner)

    assert _balances_column(_text(client.get(f"{PAGE}?since=2026-11-01&until=2026-11-01"))) == [
        "R$1.00"
    ]
    assert _balances_column(_text(client.get(f"{PAGE}?since=2026-11-02"))) == []


def test_the_planilha_opens_in_a_brazilian_excel(app, client, owner):
    """Read back the way Excel set to Portuguese (Brazil) reads a CSV: UTF-8 from its byte
    order mark, `;` between cells, a decimal comma, day/month/year in São Paulo time."""
    _dated_credits(app, owner.account_id, [("2026-11-01", 123_456), ("2026-11-02", 50)])
    with app.app_context():
        posting = db.session.scalars(
            sa.select(LedgerPosting).order_by(LedgerPosting.created_at.desc()).limit(1)
        ).one()
        posting.description = '=HYPERLINK("http://evil.example") pagamento ação'
        db.session.commit()
    sign_in(client, owner)

    page = _text(client.get(PAGE))
    link = re.search(r'<a href="([^"]+)" download>Planilha \(Excel Brasil\)</a>', page).group(1)
    assert link == f"{CSV}?mode=test&currency=BRL&format=planilha"
    response = client.get(link)
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="statement-BRL-test-planilha.csv"'
    )
    raw = response.get_data()
    assert raw.startswith(codecs.BOM_UTF8)
    header, newest, oldest = csv.reader(io.StringIO(raw.decode("utf-8-sig")), delimiter=";")
    assert header == CSV_HEADER
    moment = datetime.strptime(oldest[0], "%d/%m/%Y %H:%M:%S")
    assert (moment.day, moment.month, moment.hour) == (1, 11, 12)  # noon in São Paulo
    assert [Decimal(cell.replace(",", ".")) for cell in oldest[3:]] == [
        Decimal("1234.56"),
        Decimal(0),
        Decimal("1234.56"),
        Decimal("1234.56"),
        Decimal(0),
        Decimal("1234.56"),
    ]
    assert newest[2] == '\'=HYPERLINK("http://evil.example") pagamento ação'
    assert newest[5] == "1235,06"
