"""Days a merchant types in a list's date fields that cannot filter it (issue 21): the list page
comes back, status 400 as for any refused form, with the problem beside the field at fault,
the days as typed and every other filter kept, and the list unfiltered by day (saying so). An
export has no form to show it in, so there the same days stay a 400 error page."""

import html
import re

import pytest
from flask_babel import force_locale

from app.dashboard.params import REVERSED_DAYS, UNREADABLE_DAY
from app.models import Role
from tests.support import disputes as d
from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.refunds import merchant

NOT_FILTERED = "The days could not be used, so the list below is not filtered by day."


def _english(message) -> str:
    """A lazy message as the English pages (the test client's) show it."""
    with force_locale("en"):
        return str(message)


def _field(page: str, field_id: str) -> str:
    """The `<div class="field">` holding the input `field_id`."""
    start = page.rindex('<div class="field">', 0, page.index(f'id="{field_id}"'))
    return page[start : page.index("</div>", start)]


def _refused(client, address: str) -> str:
    response = client.get(address)
    assert response.status_code == 400
    assert "text/html" in response.headers["Content-Type"]
    return html.unescape(response.get_data(as_text=True))


@pytest.mark.parametrize(
    ("page", "status", "first", "last"),
    [
        ("payments", "PAID", ("start-date", "startDate"), ("end-date", "endDate")),
        ("disputes", "open", ("created-from", "created_from"), ("created-to", "created_to")),
    ],
)
def test_a_from_day_after_the_to_day_is_shown_beside_the_field(
    client, owner, page, status, first, last
):
    (first_id, first_name), (last_id, last_name) = first, last
    sign_in(client, owner)
    days = f"{first_name}=2026-11-21&{last_name}=2026-11-20"

    text = _refused(client, f"/dashboard/{page}?mode=live&status={status}&{days}")

    assert "<h1>" in text and "mode-banner-live" in text  # the whole page, in its mode
    start = _field(text, first_id)
    assert 'value="21/11/2026"' in start and 'aria-invalid="true"' in start
    assert f'aria-describedby="dates-hint {first_id}-error"' in start
    reversed_days = _english(REVERSED_DAYS)
    assert f'<span id="{first_id}-error" class="field-error">{reversed_days}</span>' in start
    end = _field(text, last_id)
    assert 'value="20/11/2026"' in end and "aria-invalid" not in end
    assert NOT_FILTERED in text
    assert f'<option value="{status}" selected>' in text
    assert '<input type="hidden" name="mode" value="live">' in text  # the form keeps the mode
    export = re.search(r'href="(/dashboard/[a-z]+/export\.csv[^"]*)"', text).group(1)
    assert f"status={status}" in export and first_name not in export  # only days that filter


def test_an_unreadable_day_is_shown_beside_its_field_and_the_list_keeps_the_rest(
    app, client, monkeypatch
):
    shop = merchant(app, monkeypatch)
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    sign_in(client, factories.make_member(app, shop.account_id, Role.OWNER))

    text = _refused(client, "/dashboard/disputes?type=med&created_from=2026-02-30")

    start = _field(text, "created-from")
    unreadable = _english(UNREADABLE_DAY)
    assert f'<span id="created-from-error" class="field-error">{unreadable}</span>' in start
    assert 'value="2026-02-30"' in start
    assert NOT_FILTERED in text
    assert case["id"] in text  # listed by the other filters
    assert '<option value="med" selected>' in text


@pytest.mark.parametrize(
    "query",
    ["startDate=2026-11-21&endDate=2026-11-20", "startDate=30/02/2026", "startDate=11-21-2026"],
)
def test_the_payments_export_still_refuses_days_that_cannot_filter(client, owner, query):
    sign_in(client, owner)
    response = client.get(f"/dashboard/payments/export.csv?{query}")
    assert response.status_code == 400
    assert "startDate: " in html.unescape(response.get_data(as_text=True))


def test_good_days_filter_with_no_problem_shown(client, owner):
    sign_in(client, owner)
    response = client.get("/dashboard/payments?startDate=2026-11-20&endDate=2026-11-21")
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert 'value="20/11/2026"' in _field(text, "start-date")
    assert "field-error" not in text and "aria-invalid" not in text


def test_days_are_typed_day_first_as_the_pages_write_them(app, client, owner):
    """21/11/2026 filters like 2026-11-21 (the links' form), and the field shows it day
    first in every language, whatever the browser's own date format."""
    sign_in(client, owner)
    typed = client.get("/dashboard/payments?startDate=20/11/2026&endDate=21/11/2026")
    linked = client.get("/dashboard/payments?startDate=2026-11-20&endDate=2026-11-21")
    for response in (typed, linked):
        assert response.status_code == 200
        text = response.get_data(as_text=True)
        assert 'value="20/11/2026"' in _field(text, "start-date")
        assert 'placeholder="dd/mm/yyyy"' in _field(text, "start-date")
    portuguese = client.get("/dashboard/payments", headers={"Accept-Language": "pt-BR"})
    assert 'placeholder="dd/mm/aaaa"' in portuguese.get_data(as_text=True)
