"""The dashboard's widest tables stay inside their cards at a 1280 px window (issue 21: the
dispute desk's Actions column and the delivery log's View column were cut off), filled with
what makes them wide: long account names, reasons and file names on the desk, long endpoint
addresses on the log. `pages.tables_past_their_cards` measures it; `page_problems` runs it on
every page."""

from datetime import timedelta

from app.extensions import db
from app.models import (
    Account,
    DeliveryStatus,
    DisputeStatus,
    Event,
    KeyMode,
    Role,
    WebhookDelivery,
)
from app.models.base import utcnow
from app.services.events import API_VERSION
from app.services.webhooks import endpoints as webhook_endpoints
from tests.browser.conftest import expect, sign_in
from tests.browser.pages import VIEWPORT, tables_past_their_cards
from tests.support import disputes as d
from tests.support import factories
from tests.support.refunds import merchant
from tests.support.rows import update_row

LONG_NAME = "Comércio de Utilidades Domésticas e Artigos para Presentes Irmãos Albuquerque Ltda"
LONG_REASON = (
    "O pagador afirma não reconhecer a transação e pede a devolução integral do valor; "
    "segundo o banco, o cartão-presente foi resgatado em outra cidade no mesmo dia. " * 4
)
LONG_FILE = "comprovante-de-entrega-assinado-pelo-destinatario-pedido-000123456789-rastreio.pdf"
LONG_URL = (
    "https://integracoes.loja-de-utilidades-domesticas-irmaos-albuquerque.example.com.br"
    "/api/v2/notificacoes/pagamentos/webhooks/acme-pay/recebedor-principal"
    "?token=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08&origem=painel"
)
TABLES_CUT_OFF = """<!doctype html>
<html lang="en">
<body>
  <section class="card" style="width: 400px; padding: 10px; overflow-x: auto">
    <h2>Narrow card</h2>
    <table style="width: 900px"><thead><tr><th style="width: 300px">First</th><th>Last</th></tr>
    </thead></table>
  </section>
  <section><h2>No card</h2><table style="width: 2000px"><tr><td>Wide</td></tr></table></section>
  <section class="card" style="width: 400px"><h2>Fits</h2><table><tr><td>x</td></tr></table>
  </section>
</body>
</html>"""


def _desk_cases(app, client, monkeypatch) -> None:
    """Appealed cases with long text and evidence, and one flagged "amount differs" (its
    confirm form in the Amount column), in accounts with long names."""
    for number in range(3):
        shop = merchant(app, monkeypatch)
        update_row(app, Account, shop.account_id, name=f"{LONG_NAME} {number}")
        case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
        d.update_case(
            app,
            case["id"],
            status=DisputeStatus.APPEALED,
            reason=LONG_REASON,
            appeal_reason=LONG_REASON,
            appealed_at=utcnow(),
        )
        for copy in range(2):
            name = f"{copy}-{LONG_FILE}"
            ticket = d.ticket(client, shop.api_key, case["id"], b"%PDF-1.7", file_name=name)
            d.update_evidence(app, ticket.get_json()["id"], uploaded_at=utcnow())
    d.opened(client, shop, d.paid_charge(app, client, shop)["id"], amount=999)


def _deliveries(app, account_id: str) -> None:
    """Finished deliveries (the widest statuses among them) of the longest event type, to
    endpoints with long addresses."""
    statuses = (DeliveryStatus.CANCELLED, DeliveryStatus.FAILED, DeliveryStatus.DELIVERED)
    with app.app_context():
        for number, status in enumerate(statuses):
            endpoint, _secret = webhook_endpoints.create_endpoint(
                account_id, KeyMode.TEST, f"{LONG_URL}{number}", ["withdrawal.completed"]
            )
            event = Event(
                id=f"evt_{number:032d}",
                account_id=account_id,
                mode=KeyMode.TEST,
                type="withdrawal.completed",
                api_version=API_VERSION,
                data={},
                relayed_at=utcnow(),
            )
            db.session.add(event)
            db.session.add(
                WebhookDelivery(
                    account_id=account_id,
                    mode=KeyMode.TEST,
                    endpoint_id=endpoint.id,
                    event_id=event.id,
                    event_type=event.type,
                    payload={},
                    status=status,
                    attempts=15,
                    last_status_code=503,
                    last_error="HTTP 503",
                    last_attempt_at=utcnow() - timedelta(minutes=number),
                )
            )
        db.session.commit()


def test_the_dispute_desk_fits_its_card(app, client, page, monkeypatch):
    _desk_cases(app, client, monkeypatch)
    page.set_viewport_size(VIEWPORT)
    sign_in(page, factories.make_staff(app))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Dispute desk").click()
    cases = page.get_by_role("region", name="Open and appealed cases")
    expect(cases.get_by_role("row")).to_have_count(5)  # the header and four cases

    assert tables_past_their_cards(page) == []


def test_the_delivery_log_fits_its_card(app, page):
    owner = factories.make_member(app, role=Role.OWNER)
    _deliveries(app, owner.account_id)
    page.set_viewport_size(VIEWPORT)
    sign_in(page, owner)
    page.goto("/dashboard/webhooks/deliveries")
    log = page.get_by_role("region", name="Test deliveries")
    expect(log.get_by_role("row")).to_have_count(4)

    assert tables_past_their_cards(page) == []


def test_the_check_finds_a_table_past_its_card_or_the_window(page, live_server):
    """The check answers, so a page passing it is evidence and not silence."""
    page.set_viewport_size(VIEWPORT)
    page.route(
        f"{live_server}/cut-off",
        lambda route: route.fulfill(content_type="text/html", body=TABLES_CUT_OFF),
    )
    page.goto("/cut-off")

    assert tables_past_their_cards(page) == [
        'table: the table in "Narrow card" reaches 918px, past its card\'s edge at 418px '
        "(cut off: Last)",
        'table: the table in "No card" reaches 2008px, past its window\'s edge at 1280px',
    ]
