"""A Pix payout from request to completion in real browsers: a funded merchant's OWNER asks
for it on the payouts page, platform staff approve it on the back-office page (in a browser
of their own), the worker sends it, and the merchant's page shows it completed."""

import re

from tests.browser.conftest import click_confirming, expect, run_jobs, sign_in
from tests.support import factories
from tests.support.payouts import available, funded_merchant
from tests.support.refunds import PIX_PAYOUT_FEE

DESTINATION = "ana@example.com (EMAIL)"


def test_a_requested_payout_is_approved_by_staff_and_completes(
    app, client, redis, monkeypatch, page, open_page
):
    merchant = funded_merchant(app, client, monkeypatch, amount=100_000)
    sign_in(page, merchant.member)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    expect(page.get_by_text("Available in your test wallet: R$1,000.00.")).to_be_visible()
    expect(page.get_by_text("No test payouts yet.")).to_be_visible()

    form = page.get_by_role("region", name="Request a Pix payout")
    form.get_by_label("Amount (R$)").fill("100,00")
    form.get_by_label("Pix key").fill("ana@example.com")
    form.get_by_label("Key type").select_option(label="E-mail")
    form.get_by_label("Description").fill("Saque semanal")
    form.get_by_role("button", name="Request test payout").click()
    expect(page.get_by_role("status")).to_have_text(
        f"Payout of R$100.00 to {DESTINATION} requested: Waiting for approval."
    )
    row = (
        page.get_by_role("region", name="Test payouts")
        .get_by_role("row")
        .filter(has_text=DESTINATION)
    )
    expect(row).to_contain_text("Waiting for approval")
    expect(row).to_contain_text("R$101.00")  # the wallet debit: the fee is added on top
    (payout,) = client.get("/v1/withdrawals", headers=merchant.headers).get_json()["data"]
    assert (payout["status"], payout["amount"]) == ("PENDING", 10_000)
    assert available(client, merchant) == 100_000  # nothing debited before approval

    staff = factories.make_staff(app)
    desk = open_page("staff")
    sign_in(desk, staff)
    expect(desk).to_have_url(re.compile(r"/dashboard/back-office$"))
    waiting = (
        desk.get_by_role("region", name="Payouts waiting for approval")
        .get_by_role("row")
        .filter(has_text=DESTINATION)
    )
    expect(waiting).to_contain_text("Loja Teste")
    expect(waiting).to_contain_text("R$100.00")
    question = click_confirming(desk, waiting.get_by_role("button", name="Approve"))
    assert question.startswith("Approve R$100.00 to ana@example.com (EMAIL) for Loja Teste?")
    expect(desk.get_by_role("status")).to_have_text(
        f"The R$100.00 payout to {DESTINATION} approved: the amount and fee were debited "
        "and it is being sent."
    )
    expect(desk.get_by_text("No payouts are waiting for approval.")).to_be_visible()

    run_jobs(app, redis)

    page.reload()
    expect(row).to_contain_text("Completed")
    expect(row).not_to_contain_text("Waiting for approval")
    expect(row.get_by_role("button", name=re.compile("Cancel"))).to_have_count(0)
    expect(page.get_by_text("Available in your test wallet: R$899.00.")).to_be_visible()
    body = client.get(f"/v1/withdrawals/{payout['id']}", headers=merchant.headers).get_json()
    assert body["status"] == "COMPLETED"
    assert available(client, merchant) == 100_000 - 10_000 - PIX_PAYOUT_FEE
