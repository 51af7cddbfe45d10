"""A merchant's owner answers a dispute in a real browser: the evidence goes from the page
straight to the signed storage address (ticket, PUT, complete by the page's own script),
then shows in the case's evidence list and counts in the API."""

import pytest

from app.models import Role
from tests.browser.conftest import sign_in
from tests.support import disputes as d
from tests.support import factories
from tests.support.deployed import PUBLIC_BASE_URL
from tests.support.refunds import merchant

PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.fixture
def shop(app, monkeypatch, tmp_path):
    (tmp_path / "evidence").mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(tmp_path / "evidence"))
    return merchant(app, monkeypatch)


def test_evidence_goes_from_the_browser_to_the_signed_address(app, client, shop, page, tmp_path):
    owner = factories.make_member(app, shop.account_id, Role.OWNER)
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    document = tmp_path / "nota-fiscal.pdf"
    document.write_bytes(PDF)

    sign_in(page, owner)
    page.goto(f"/dashboard/disputes/{case['id']}?mode=test")
    page.get_by_label("File").set_input_files(document)
    page.get_by_role("button", name="Upload evidence").click()
    page.get_by_role("link", name="nota-fiscal.pdf").wait_for()

    body = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    assert body["evidence_count"] == 1
    (item,) = d.call(
        client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}/evidence"
    ).get_json()["data"]
    assert (item["file_name"], item["file_size"], item["mime_type"]) == (
        "nota-fiscal.pdf",
        len(PDF),
        "application/pdf",
    )
    viewed = page.request.get(item["view_url"].removeprefix(PUBLIC_BASE_URL))
    assert viewed.ok and viewed.body() == PDF


def test_a_refused_file_is_explained_on_the_page(app, client, shop, page, tmp_path):
    owner = factories.make_member(app, shop.account_id, Role.OWNER)
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")

    sign_in(page, owner)
    page.goto(f"/dashboard/disputes/{case['id']}?mode=test")
    page.get_by_label("File").set_input_files(empty)
    page.get_by_role("button", name="Upload evidence").click()
    status = page.locator("[data-upload-status]")
    status.filter(has_text="file_size").wait_for()
    body = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    assert body["evidence_count"] == 0
