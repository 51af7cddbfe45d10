"""The layout every dashboard page shares: the mode the page shows named under the top bar,
navigation that keeps a live page's mode, and times as <time> elements in São Paulo time."""

import re
from datetime import UTC, datetime

from app.templating import breakable_url, local_datetime
from tests.support.dashboard import sign_in


def _nav_links(text: str) -> dict[str, str]:
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', text, re.S)[1]
    return {label: href for href, label in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav)}


def test_test_pages_say_test_mode_and_live_pages_say_live_mode(app, client, owner):
    sign_in(client, owner)
    test_page = client.get("/dashboard/payments").get_data(as_text=True)
    assert '<p class="mode-banner" data-mode="test"><strong>Test mode</strong>' in test_page
    live_page = client.get("/dashboard/wallets?mode=live").get_data(as_text=True)
    assert 'data-mode="live"><strong>Live mode</strong>: real payments and real money.' in live_page
    assert "Test mode</strong>" not in live_page


def test_navigation_keeps_live_mode_and_leaves_test_mode_out_of_the_address(app, client, owner):
    sign_in(client, owner)
    live = _nav_links(client.get("/dashboard/payouts?mode=live").get_data(as_text=True))
    assert live["Payments"] == "/dashboard/payments?mode=live"
    assert live["Webhooks"] == "/dashboard/webhooks?mode=live"
    assert live["API keys"] == "/dashboard/api-keys"  # both modes on one page
    test = _nav_links(client.get("/dashboard/payouts").get_data(as_text=True))
    assert test["Payments"] == "/dashboard/payments"


def test_pages_showing_both_modes_name_neither(app, client, owner):
    sign_in(client, owner)
    text = client.get("/dashboard/api-keys").get_data(as_text=True)
    assert "mode-banner" not in text


def test_times_are_time_elements_in_sao_paulo_with_the_zone_kept_together(app):
    moment = datetime(2026, 11, 20, 2, 30, tzinfo=UTC)
    with app.test_request_context():
        shown = app.jinja_env.from_string("{{ moment | local_datetime }}").render(moment=moment)
        written = local_datetime(moment)  # PDFs, messages
    assert shown == (
        '<time datetime="2026-11-19T23:30:00-03:00">19/11/2026 23:30 '
        '<span class="zone">(America/Sao_Paulo)</span></time>'
    )
    assert written == "19/11/2026 23:30 (America/Sao_Paulo)"


def test_addresses_wrap_only_between_their_parts_and_stay_escaped():
    shown = breakable_url("https://hooks.example.com/in?a=1&b=<x>")
    assert shown == (
        "https://<wbr>hooks<wbr>.example<wbr>.com<wbr>/in<wbr>?a<wbr>=1<wbr>&amp;b<wbr>=&lt;x&gt;"
    )
