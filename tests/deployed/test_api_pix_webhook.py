"""Live Pix on the Procfile stack: gunicorn, the workers and `rq cron` talk to the PSP (the
fake API Pix, over mutual TLS) as they would in production. A forged webhook that knows the
path secret credits nothing; the PSP's real webhook pays the charge; a Pix whose webhook never
came is credited by `rq cron`'s reconciliation, and a charge with a due date whose cobv the
PSP removed is cancelled by it; a Pix of no charge reaches the back office. All through
HTTP, on the stack's public host name."""

from datetime import timedelta

import pytest
import requests

from app.models.base import utcnow
from app.pix.identifiers import new_end_to_end_id
from app.providers.api_pix.mapping import COBV, txid_for, valor
from tests.support.charges import CPF, charge_body
from tests.support.deployed import RECONCILE_SECONDS, DeployedStack, created
from tests.support.fake_api_pix import RECEIVER_KEY, FakeApiPix

AMOUNT = 4_321
# Reconciliation runs every RECONCILE_SECONDS; a few runs' time, for a slow machine.
RECONCILED_SECONDS = RECONCILE_SECONDS * 15


@pytest.fixture
def live(deployed: DeployedStack) -> dict:
    return {"apikey": deployed.seed["live_api_key"]}


def live_charge(deployed: DeployedStack, live: dict, amount: int = AMOUNT) -> dict:
    return created(
        deployed.api("POST", "/v1/charges", json=charge_body(amount=amount), headers=live)
    )


def status(deployed: DeployedStack, live: dict, charge: dict) -> str:
    response = deployed.api("GET", f"/v1/charges/{charge['id']}", headers=live)
    assert response.status_code == 200, response.text
    return response.json()["status"]


def txid(charge: dict) -> str:
    return txid_for(charge["id"].removeprefix("ch_"))


def post_webhook(deployed: DeployedStack, body: dict) -> requests.Response:
    secret = deployed.settings["API_PIX_WEBHOOK_SECRET"]
    return deployed.request("POST", f"/v1/api-pix/webhook/{secret}/pix", json=body)


def forged(charge: dict) -> dict:
    """What an attacker holding the path secret would post: a well-formed Pix the PSP never
    received, for a real pending charge, of its exact amount."""
    return {
        "pix": [
            {
                "endToEndId": new_end_to_end_id("87654321", utcnow()),
                "txid": txid(charge),
                "valor": valor(charge["amount"]),
                "chave": RECEIVER_KEY,
                "horario": utcnow().isoformat().replace("+00:00", "Z"),
            }
        ]
    }


def test_a_live_charge_is_a_cob_at_the_psp_over_mutual_tls(deployed, deployed_psp, live):
    charge = live_charge(deployed, live)

    assert charge["status"] == "pending"
    assert charge["pix"]["br_code"] == deployed_psp.cobs[txid(charge)]["pixCopiaECola"]
    (put,) = deployed_psp.calls("PUT", f"/cob/{txid(charge)}")
    assert put.body["solicitacaoPagador"] == charge_body()["description"]


def test_a_forged_webhook_never_credits_and_the_real_one_pays(
    deployed: DeployedStack, deployed_psp: FakeApiPix, live
):
    charge = live_charge(deployed, live)
    body = forged(charge)

    answered = post_webhook(deployed, body)

    assert answered.status_code == 200, answered.text
    assert deployed_psp.calls("GET", f"/pix/{body['pix'][0]['endToEndId']}")
    assert status(deployed, live, charge) == "pending"
    assert "A webhook call reported Pix" in deployed.log("web")  # the notice's ERROR line

    pix = deployed_psp.pay(txid(charge))
    paid = post_webhook(deployed, deployed_psp.webhook_body(pix["endToEndId"]))

    assert paid.status_code == 200, paid.text
    assert status(deployed, live, charge) == "paid"


def test_rq_cron_credits_a_pix_whose_webhook_never_came(
    deployed: DeployedStack, deployed_psp: FakeApiPix, live
):
    charge = live_charge(deployed, live)

    deployed_psp.pay(txid(charge))  # the PSP's webhook is lost

    deployed.wait_for(
        lambda: status(deployed, live, charge) == "paid",
        RECONCILED_SECONDS,
        "the reconciliation job to credit the Pix",
    )


def test_rq_cron_cancels_a_charge_with_a_due_date_the_psp_removed(
    deployed: DeployedStack, deployed_psp: FakeApiPix, live
):
    """A live charge with a due date is a cobv at the PSP. When the PSP removes it on its own,
    no webhook says so: `rq cron`'s reconciliation lists `GET /cobv` around the creation of
    each cobv still awaited, and cancels the charge."""
    due_date = (utcnow() + timedelta(days=10)).date().isoformat()
    charge = created(
        deployed.api(
            "POST",
            "/v1/charges",
            json=charge_body(
                amount=AMOUNT,
                customer={"name": "Ana Souza", "document": CPF},
                due={"date": due_date},
            ),
            headers=live,
        )
    )
    cobv_txid = txid_for(charge["id"].removeprefix("ch_"), COBV)
    assert deployed_psp.calls("PUT", f"/cobv/{cobv_txid}")

    deployed_psp.remove_cob(cobv_txid)

    deployed.wait_for(
        lambda: status(deployed, live, charge) == "cancelled",
        RECONCILED_SECONDS,
        "the reconciliation job to cancel the removed cobv's charge",
    )
    listed = deployed_psp.calls("GET", "/cobv")
    assert any(call.args.get("status") == "REMOVIDA_PELO_PSP" for call in listed)


def test_a_pix_of_no_charge_reaches_the_back_office(deployed: DeployedStack, deployed_psp):
    static = deployed_psp.receive(1_234)  # a static QR code: no txid, no webhook
    session = deployed.signed_in(deployed.seed["staff_email"], deployed.seed["staff_password"])

    def listed() -> bool:
        page = session.get(deployed.base + "/dashboard/back-office/psp", timeout=10)
        assert page.status_code == 200, page.text
        return static["endToEndId"] in page.text

    deployed.wait_for(listed, RECONCILED_SECONDS, "the Pix of no charge on the Live PSP page")
