"""Issue 18: a boleto has one due date, a day in São Paulo, and the barcode's due factor,
`boletoExpiresAt`, the dashboard, the checkout page and the PDF slip all name that same day.
Boletos are issued through `/v1/payments` and the real RQ worker, with the sandbox's clock set
to 23:30 in São Paulo (02:30 UTC, already the next day in UTC). The slip also prints the
payer's name and formatted CPF or CNPJ, as FEBRABAN's "Pagador" block does.
"""

import io
import re
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pytest
from pypdf import PdfReader

from tests.support import factories
from tests.support.dashboard import sign_in
from tests.support.payments import finalised

SAO_PAULO = ZoneInfo("America/Sao_Paulo")
FIRST_FACTOR_DAY = date(2000, 7, 3)  # factor 1000: 1000 days after FEBRABAN's 1997-10-07
FACTOR_CYCLE_DAYS = 9000  # factors run 1000..9999, then restart at 1000 (first on 2025-02-22)

# (sandbox clock in UTC, due date: three business days after the São Paulo date). Each clock
# is 23:30 of the day before in São Paulo; counting from the UTC date would give another day.
ISSUES = [
    # Tue 24/11 in São Paulo: due Fri 27/11, where the UTC date gives Mon 30/11
    (datetime(2026, 11, 25, 2, 30, tzinfo=UTC), date(2026, 11, 27)),
    # the end of the first factor cycle: due 21/02/2025 (9999), not 24/02/2025 (1002)
    (datetime(2025, 2, 19, 2, 30, tzinfo=UTC), date(2025, 2, 21)),
    # the second restart: due 13/10/2049 (9999; 12/10 is a holiday), not 14/10/2049 (1000)
    (datetime(2049, 10, 8, 2, 30, tzinfo=UTC), date(2049, 10, 13)),
]


@pytest.fixture
def api_key(app, owner):
    return factories.make_api_key(app, owner.account_id)


def _boleto_issued_at(app, redis, client, api_key, monkeypatch, now: datetime, **body) -> dict:
    monkeypatch.setattr("app.providers.sandbox.utcnow", lambda: now)
    return finalised(app, redis, client, api_key, paymentMethods=["BOLETO"], **body)


def _factor_date(factor: int, issued: date) -> date:
    """The first day on or after `issued` whose FEBRABAN due factor is `factor`: the factor
    repeats every 9000 days, so the issue date picks the cycle."""
    day = FIRST_FACTOR_DAY + timedelta(days=factor - 1000)
    while day < issued:
        day += timedelta(days=FACTOR_CYCLE_DAYS)
    return day


def _pdf_text(client, payment: dict) -> str:
    response = client.get(urlsplit(payment["boletoPdfUrl"]).path)
    assert response.mimetype == "application/pdf"
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(response.data)).pages)


@pytest.mark.parametrize(("now", "due"), ISSUES)
def test_barcode_expiry_dashboard_and_pdf_name_one_due_date(
    app, redis, client, owner, api_key, monkeypatch, now, due
):
    payment = _boleto_issued_at(app, redis, client, api_key, monkeypatch, now)
    issued = now.astimezone(SAO_PAULO).date()
    printed = due.strftime("%d/%m/%Y")

    assert _factor_date(int(payment["boletoBarcode"][5:9]), issued) == due
    assert int(payment["boletoLine"][33:37]) == int(payment["boletoBarcode"][5:9])
    expires_at = datetime.fromisoformat(payment["boletoExpiresAt"])
    assert expires_at == datetime.combine(due + timedelta(days=1), time.min, tzinfo=SAO_PAULO)
    assert expires_at.astimezone(UTC).time() == time(3, 0)  # the end of the day, at -03:00

    sign_in(client, owner)
    page = client.get(f"/dashboard/payments/{payment['id']}?mode=test").get_data(as_text=True)
    if due >= datetime.now(SAO_PAULO).date():
        assert f"<dt>Due date</dt><dd>{printed}</dd>" in page
    else:  # past its due date today: expired on read, so no instructions are offered
        assert "Digitable line" not in page and "can no longer pay" in page

    text = _pdf_text(client, payment)
    assert re.search(rf"Vencimento\s*{re.escape(printed)}", text)  # the account's pt_BR
    assert "00:00" not in text


def test_the_checkout_page_shows_the_same_due_date(app, redis, client, api_key, monkeypatch):
    now, due = ISSUES[-1]  # still payable, so the checkout page offers it
    payment = _boleto_issued_at(app, redis, client, api_key, monkeypatch, now)
    page = client.get(f"/checkout/{payment['id']}").get_data(as_text=True)
    assert f"Due {due.strftime('%d/%m/%Y')}" in page


@pytest.mark.parametrize(
    ("document", "printed"),
    [
        ("52998224725", "CPF 529.982.247-25"),
        ("11.222.333/0001-81", "CNPJ 11.222.333/0001-81"),
        ("12ABC34501DE35", "CNPJ 12.ABC.345/01DE-35"),  # the alphanumeric CNPJ
        (None, "CPF/CNPJ não informado"),
    ],
)
def test_the_pdf_names_the_payer_and_their_document(app, redis, client, api_key, document, printed):
    body = {"customerName": "Ana Souza"} | ({"customerDocument": document} if document else {})
    payment = finalised(app, redis, client, api_key, paymentMethods=["BOLETO"], **body)

    text = _pdf_text(client, payment)
    assert re.search(r"Pagador\s*Ana Souza", text)  # the account's pt_BR
    assert printed in text
