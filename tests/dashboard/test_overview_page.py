"""The overview: today's payments and the 30-day paid volume chart by São Paulo calendar day,
the balances, the upcoming releases, the pending payouts, the open disputes and the failing
webhook endpoints of the mode asked for; empty states that say what to do next; never another
account's figures."""

import html
import re
from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy as sa

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import (
    KeyMode,
    Role,
    SettlementRelease,
    TransactionStatus,
)
from app.services.webhooks import endpoints as webhook_endpoints
from tests.support import disputes as d
from tests.support import factories
from tests.support import ledger_rows as rows
from tests.support import payouts as payout_calls
from tests.support.charges import created, pay
from tests.support.dashboard import sign_in
from tests.support.payouts import funded_merchant
from tests.support.refunds import merchant

PAGE = "/dashboard/"
NOW = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)  # 10:00 in São Paulo, Monday 23/11/2026
S = TransactionStatus
DAY_ROW = re.compile(r'<tr><th scope="row">(\d\d/\d\d/\d{4})</th><td class="amount">([^<]+)</td>')


@pytest.fixture
def frozen(monkeypatch):
    """The page's clock at `NOW`, so its 'today' and its 30 days are known."""
    monkeypatch.setattr("app.dashboard.overview.utcnow", lambda: NOW)


def _text(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.get_data(as_text=True))


def _section(page: str, heading_id: str) -> str:
    """The page from one section's heading to the next section's."""
    start = page.index(f'id="{heading_id}"')
    return page[start : page.find("<h2", start)]


def test_todays_figures_and_the_daily_chart_count_sao_paulo_days(app, client, owner, frozen):
    account = owner.account_id
    today, yesterday = date(2026, 11, 23), date(2026, 11, 22)
    first_day = date(2026, 10, 25)  # the 30th day back, today included
    assert rows.sao_paulo(today, 0) == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    rows.payment(app, account, rows.sao_paulo(today, 0), 123_456)  # 03:00 UTC: today's first minute
    rows.payment(app, account, rows.sao_paulo(today, 9), 10_000)
    rows.payment(app, account, rows.sao_paulo(today, 8), 5_000, S.REFUSED)
    rows.payment(app, account, rows.sao_paulo(today, 9, 30), 7_000, S.WAITING_PAYMENT)
    rows.payment(app, account, rows.sao_paulo(yesterday, 23, 59), 30_000)  # 02:59 UTC on the 23rd
    rows.payment(app, account, rows.sao_paulo(date(2026, 11, 10), 12), 20_000)
    rows.payment(app, account, rows.sao_paulo(first_day, 0), 1_000)
    rows.payment(
        app, account, rows.sao_paulo(first_day, 0) - timedelta(minutes=1), 99_900
    )  # too old
    sign_in(client, owner)

    page = _text(client.get(PAGE))

    today_card = _section(page, "today")
    assert "23/11/2026" in today_card
    paid_volume = re.search(r"<dt>Paid volume</dt>\s*<dd class=\"figure\">(.*?)</dd>", today_card)
    assert paid_volume.group(1) == '<span class="amount">R$1,334.56</span>'
    assert '<dt>Paid payments</dt><dd class="figure">2</dd>' in today_card
    assert '<dt>Payments created</dt><dd class="figure">4</dd>' in today_card
    assert '<dt>Failed</dt><dd class="figure">1</dd>' in today_card

    chart = _section(page, "daily-volume")
    days = dict(DAY_ROW.findall(chart))
    assert len(days) == 30
    charted = list(days)
    assert (charted[0], charted[-1]) == ("25/10/2026", "23/11/2026")
    sales = {
        "23/11/2026": "R$1,334.56",
        "22/11/2026": "R$300.00",
        "10/11/2026": "R$200.00",
        "25/10/2026": "R$10.00",
    }
    assert {day: volume for day, volume in days.items() if volume != "R$0.00"} == sales
    assert "24/10/2026" not in chart and "R$999.00" not in chart
    assert '<svg class="volume-chart"' in chart and 'role="img"' in chart
    assert (
        '<title id="chart-BRL-title">Daily paid volume in BRL, 25/10/2026 to 23/11/2026</title>'
        in chart
    )
    assert 'aria-labelledby="chart-BRL-title chart-BRL-desc"' in chart
    assert "Total R$1,844.56." in chart
    heights = [int(h) for h in re.findall(r'<rect [^>]*height="(\d+)"', chart)]
    assert len(heights) == 30 and heights.count(0) == 26
    assert heights[-1] == max(heights) and all(heights[i] > 0 for i in (0, 16, 28, 29))
    assert "<title>22/11/2026: R$300.00</title>" in chart


def test_a_chart_per_currency_paid_the_primary_first(app, client, owner, frozen):
    rows.payment(app, owner.account_id, NOW - timedelta(hours=1), 4_200, currency="USD")
    rows.payment(app, owner.account_id, NOW - timedelta(days=2), 1_500)
    sign_in(client, owner)
    page = _text(client.get(PAGE))
    assert page.index('id="chart-BRL-title"') < page.index('id="chart-USD-title"')
    assert "$42.00" in _section(page, "today") and "R$0.00" not in _section(page, "today")


def test_balances_releases_and_pending_payouts_of_a_merchant(app, client, monkeypatch):
    merchant = funded_merchant(app, client, monkeypatch)  # R$1,000.00 available
    monkeypatch.setitem(app.config, "SETTLEMENT_HOLD", "D+1")
    pay(client, merchant.api_key, created(client, merchant.api_key, amount=25_000)["id"])
    for amount in (10_000, 5_000):
        assert payout_calls.request(client, merchant, amount=amount).status_code == 201
    sign_in(client, merchant.member)

    page = _text(client.get(PAGE))

    balances = _section(page, "balances")
    assert '<dt>Available</dt><dd class="amount figure">R$1,000.00</dd>' in balances
    assert '<dt>Pending</dt><dd class="amount">R$250.00</dd>' in balances
    assert '<dt>Retained</dt><dd class="amount">R$0.00</dd>' in balances
    with app.app_context():
        release_at = db.session.scalar(
            sa.select(SettlementRelease.release_at).where(SettlementRelease.released_at.is_(None))
        )
    releases = _section(page, "upcoming-releases")
    assert release_at.astimezone(SAO_PAULO).strftime("%d/%m/%Y %H:%M") in releases
    assert "R$250.00" in releases
    payouts = _section(page, "pending-payouts")
    assert (
        '2 payouts · <span class="amount">R$150.00</span> <span class="muted">requested' in payouts
    )
    link = "/dashboard/payouts?mode=test&status=PENDING"
    assert f'<a href="{link}">Review pending test payouts</a>' in payouts
    listed = _text(client.get(link))
    assert listed.count("R$100.00") >= 1 and listed.count("R$50.00") >= 1
    assert 'Paid payments</dt><dd class="figure">2</dd>' in page  # funded charge and this one


def test_the_next_releases_soonest_first(app, client, owner):
    soon = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    for day in range(6, 0, -1):
        rows.pending_release(app, owner.account_id, 1_000 * day, soon + timedelta(days=day - 1))
    rows.pending_release(app, owner.account_id, 50, soon)  # due at the same moment: added up
    sign_in(client, owner)
    releases = _section(_text(client.get(PAGE)), "upcoming-releases")
    amounts = re.findall(r'<td class="amount">([^<]+)</td>', releases)
    assert amounts == ["R$10.50", "R$20.00", "R$30.00", "R$40.00", "R$50.00"]
    assert releases.index("01/12/2026 00:00") < releases.index("02/12/2026 00:00")


def test_test_and_live_figures_stay_apart(app, client, owner, frozen):
    account = owner.account_id
    rows.payment(app, account, NOW - timedelta(hours=1), 1_111)
    rows.payment(app, account, NOW - timedelta(hours=1), 77_777, mode=KeyMode.LIVE)
    rows.credit(app, account, 2_222)
    rows.credit(app, account, 500_000, KeyMode.LIVE)
    rows.pending_release(app, account, 3_333, NOW + timedelta(days=1))
    rows.pending_release(app, account, 44_444, NOW + timedelta(days=2), KeyMode.LIVE)
    rows.payout(app, account, 555)
    rows.payout(app, account, 66_666, KeyMode.LIVE)
    sign_in(client, owner)

    test_page = _text(client.get(PAGE))
    assert 'href="/dashboard/?mode=test" aria-current="page">Test mode</a>' in test_page
    for figure in ("R$11.11", "R$22.22", "R$33.33", "R$5.55"):
        assert figure in test_page
    for figure in ("R$777.77", "R$5,000.00", "R$444.44", "R$666.66"):
        assert figure not in test_page

    live_page = _text(client.get(f"{PAGE}?mode=live"))
    assert 'href="/dashboard/?mode=live" aria-current="page">Live mode</a>' in live_page
    for figure in ("R$777.77", "R$5,000.00", "R$444.44", "R$666.66"):
        assert figure in live_page
    for figure in ("R$11.11", "R$22.22", "R$33.33", "R$5.55"):
        assert figure not in live_page
    assert '<a href="/dashboard/payouts?mode=live&status=PENDING">' in live_page
    assert client.get(f"{PAGE}?mode=prod").status_code == 400


def test_disputes_and_failing_webhooks_are_the_modes_own(app, client, monkeypatch):
    """Under the live banner, nothing from the sandbox (issue 21: a test dispute was listed)."""
    shop = merchant(app, monkeypatch)
    test_case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    live_case = d.opened(client, shop, d.paid_charge(app, client, shop, amount=65_432)["id"])
    d.update_case(app, live_case["id"], mode=KeyMode.LIVE)
    with app.app_context():
        endpoint, _secret = webhook_endpoints.create_endpoint(
            shop.account_id, KeyMode.TEST, "http://localhost:9000/hooks", ["charge.paid"]
        )
        endpoint.consecutive_dead_letters = app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]
        db.session.commit()
    sign_in(client, factories.make_member(app, shop.account_id, Role.OWNER))

    live = _text(client.get(f"{PAGE}?mode=live"))
    disputes = _section(live, "open-disputes")
    assert live_case["id"] in disputes and "R$654.32" in disputes
    assert f'href="/dashboard/disputes/{live_case["id"]}?mode=live"' in disputes
    assert test_case["id"] not in live and "R$123.45" not in live
    assert "keeps failing" not in live and "test webhook" not in live

    test = _text(client.get(PAGE))
    disputes = _section(test, "open-disputes")
    assert test_case["id"] in disputes and f"/disputes/{test_case['id']}?mode=test" in disputes
    assert live_case["id"] not in test and "R$654.32" not in test
    assert "Deliveries to 1 test webhook endpoint keeps failing." in test


def test_an_empty_account_says_what_to_do_next(client, owner):
    sign_in(client, owner)
    page = _text(client.get(PAGE))
    assert "<svg" not in page
    assert "No test payments paid in the last 30 days." in page
    assert 'href="/dashboard/payments?mode=test#new-test-payment">test payment</a>' in page
    assert 'href="/dashboard/payments?mode=test#new-test-charge">test Pix charge</a>' in page
    assert '<a href="/v1/docs">API documentation</a>' in page
    assert '<dt>Available</dt><dd class="amount figure">R$0.00</dd>' in page
    assert '<dt>Payments created</dt><dd class="figure">0</dd>' in page
    assert "Nothing waiting for release." in page
    assert "No test payouts waiting for approval." in page
    assert '<a href="/dashboard/payouts?mode=test#new-payout">Request a payout</a>' in page
    assert "0 live · 0 test" in page and "Your role" not in page

    live = _text(client.get(f"{PAGE}?mode=live"))
    assert "No live payments paid in the last 30 days." in live
    assert '<a href="/dashboard/api-keys">live API key</a>' in live


def test_another_accounts_figures_never_show(app, client, owner, frozen):
    stranger = factories.make_account(app, "Alheia")
    rows.payment(app, stranger, NOW - timedelta(hours=1), 88_888)
    rows.payment(app, stranger, NOW - timedelta(hours=2), 1_234, S.REFUSED)
    rows.credit(app, stranger, 99_999)
    rows.pending_release(app, stranger, 12_121, NOW + timedelta(days=1))
    rows.payout(app, stranger, 34_343)
    rows.payment(app, owner.account_id, NOW - timedelta(hours=1), 100)
    sign_in(client, owner)

    page = _text(client.get(PAGE))
    for figure in ("R$888.88", "R$12.34", "R$999.99", "R$121.21", "R$343.43"):
        assert figure not in page
    assert '<dt>Payments created</dt><dd class="figure">1</dd>' in page
    assert '<dt>Failed</dt><dd class="figure">0</dd>' in page
    assert "Nothing waiting for release." in page
    assert "No test payouts waiting for approval." in page


def test_the_page_keeps_to_the_content_security_policy(app, client, owner, frozen):
    rows.payment(app, owner.account_id, NOW - timedelta(hours=1), 100)
    sign_in(client, owner)
    response = client.get(PAGE)
    page = response.get_data(as_text=True)
    assert "style-src 'self'" in response.headers["Content-Security-Policy"]
    assert not re.search(r"<style|\sstyle=|<script(?![^>]*\ssrc=)", page)
    assert '<link rel="stylesheet" href="/static/overview.css">' in page
    assert client.get("/static/overview.css").status_code == 200
