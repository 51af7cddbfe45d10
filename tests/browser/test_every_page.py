"""Every page the dashboard has is opened in a real browser (issue 8), as its users reach it:
signed in as the account's OWNER (platform staff for the back-office pages, nobody for the
sign-in page), mostly by clicking through the navigation and the pages' own links, in an
account with something on every page: paid and pending payments, a dispute, a webhook
endpoint with a delivery, a pending payout, a Pix payment held for review.

`VISITS` says how each GET endpoint under /dashboard and /checkout, and the API reference at
/v1/docs, is reached and what it gives: an HTML page that must pass `pages.page_problems`
(saved as `test-results/browser/<locale>/<endpoint>.png`), an old address that redirects to one, a
CSV or PDF the link downloads, a PDF the browser shows, or something a page fetches. An
endpoint the app has and the table lacks fails `test_every_page_has_a_browser_test`.

The pages are visited one after the other by one test, in one browser per user, so the
account is made once; the failure lists every page's problems, not only the first page's.
The test runs once per language (`LOCALES`, asked for by the browsers' Accept-Language):
the steps find links by their words in that language, the screenshots go to
`test-results/browser/<locale>/`, and a Portuguese page must show no English
(`pages.english_left`).
"""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from babel.support import NullTranslations, Translations

from app.extensions import db
from app.models import KeyMode, Role
from app.services.webhooks import endpoints as webhook_endpoints
from tests.browser.conftest import SCREENSHOTS, run_jobs, sign_in
from tests.browser.pages import VIEWPORT, BrowserLog, endpoint_at, english_left, page_problems
from tests.support import charges, factories, payments, payouts
from tests.support import disputes as d
from tests.support.http import bearer, login
from tests.support.refunds import fund, merchant

if TYPE_CHECKING:
    from playwright.sync_api import Page

try:  # without Playwright the `browser` fixture skips the test first
    from playwright.sync_api import Error as BrowserError
except ImportError:  # pragma: no cover
    BrowserError = Exception

PREFIXES = ("/dashboard/", "/checkout/", "/v1/docs")
TRANSLATIONS = Path(__file__).resolve().parents[2] / "app" / "translations"
# Each page is visited in each language; their screenshots go to SCREENSHOTS/<locale>/.
LOCALES = {"en": "en", "pt_BR": "pt-BR", "pt_PT": "pt-PT"}
PDF_SIGNATURE = b"%PDF-"


class Kind(Enum):
    PAGE = "an HTML page"
    REDIRECT = "an old address redirecting to a page"
    DOWNLOAD = "a file its link downloads"
    SHOWN_PDF = "a PDF the browser shows"
    FETCHED = "fetched by another page"


class Who(Enum):
    OWNER = "the account's OWNER"
    STAFF = "platform staff"
    NOBODY = "nobody signed in"


HOME = {Who.OWNER: "/dashboard/", Who.STAFF: "/dashboard/back-office"}


@dataclass(frozen=True)
class World:
    """One merchant account with something on every page, and who signs in."""

    owner: factories.Member
    staff: factories.Member
    paid_charge_id: str  # a paid Pix charge under dispute
    case_id: str
    pix_and_boleto_payment_id: str  # pending: Pix QR, boleto line and slip
    card_payment_id: str  # pending, in EUR: the sandbox card page
    locale: str  # the language the browsers ask for (`LOCALES`)
    translations: NullTranslations

    def say(self, english: str) -> str:
        """What a page in the world's language shows for `english`."""
        return self.translations.gettext(english)


Step = Callable[["Page", World], None]


@dataclass(frozen=True)
class Visit:
    """How one endpoint is reached: `who` starts from their home page (`HOME`) and takes the
    `steps`; for a download, the last step's click gives the file."""

    steps: tuple[Step, ...]
    kind: Kind = Kind.PAGE
    who: Who = Who.OWNER


def goto(address: Callable[[World], str]) -> Step:
    return lambda page, world: page.goto(address(world))


def nav(label: str) -> Step:
    """A link of the main navigation."""
    return lambda page, world: (
        page.get_by_role("navigation", name=world.say("Main"))
        .get_by_role("link", name=world.say(label), exact=True)
        .click()
    )


def link(name: str) -> Step:
    return lambda page, world: page.get_by_role(
        "link", name=world.say(name), exact=True
    ).first.click()


def link_in(region: str, name: Callable[[World], str | re.Pattern]) -> Step:
    """The first link called `name` in a section (a table's row, say)."""
    return lambda page, world: (
        page.get_by_role("region", name=world.say(region))
        .get_by_role("link", name=name(world))
        .first.click()
    )


def typed_payout_amount(page) -> None:
    """An amount typed in the payout form (once its script listens), and the fee line's
    question answered."""
    page.wait_for_load_state()
    with page.expect_response(lambda response: "/dashboard/payouts/fee" in response.url):
        page.locator("#amount").fill("10,00")


def payment(payment_id: Callable[[World], str]) -> tuple[Step, ...]:
    return nav("Payments"), link_in("Test payments", payment_id)


def checkout(payment_id: Callable[[World], str]) -> tuple[Step, ...]:
    return *payment(payment_id), link("Open the hosted checkout page")


PAID_CHARGE = attrgetter("paid_charge_id")
PIX_AND_BOLETO = attrgetter("pix_and_boleto_payment_id")
API_REFERENCE = (nav("Overview"), link("Interactive API documentation"))
DELIVERY_LOG = (nav("Webhooks"), link("Delivery log"))

VISITS: dict[str, Visit] = {
    "dashboard.login": Visit((goto(lambda world: "/dashboard/login"),), who=Who.NOBODY),
    "dashboard.overview": Visit((nav("Overview"),)),
    "dashboard.choose_account": Visit(
        (lambda page, world: page.get_by_title(world.say("Switch account")).click(),)
    ),
    "dashboard.payments_page": Visit((nav("Payments"),)),
    "dashboard.payment_page": Visit(payment(PAID_CHARGE)),
    "dashboard.payment_stats_page": Visit((nav("Payments"), link("Stats and daily volume"))),
    "dashboard.payments_csv": Visit(
        (nav("Payments"), link("Download these payments as CSV")), Kind.DOWNLOAD
    ),
    "dashboard.payment_receipt": Visit(
        (*payment(PAID_CHARGE), link("Download receipt (PDF)")), Kind.DOWNLOAD
    ),
    # The charges pages became the payments pages; their addresses live on in bookmarks only.
    "dashboard.charges_page": Visit(
        (goto(lambda world: "/dashboard/charges?mode=test"),), Kind.REDIRECT
    ),
    "dashboard.charge_page": Visit(
        (goto(lambda world: f"/dashboard/charges/{world.paid_charge_id}"),), Kind.REDIRECT
    ),
    "dashboard.disputes_page": Visit((nav("Disputes"),)),
    "dashboard.dispute_page": Visit(
        (nav("Disputes"), link_in("Test disputes", attrgetter("case_id")))
    ),
    "dashboard.disputes_csv": Visit(
        (nav("Disputes"), link("Download these disputes as CSV")), Kind.DOWNLOAD
    ),
    "dashboard.wallets_page": Visit((nav("Wallets"),)),
    "dashboard.wallet_statement_csv": Visit(
        (nav("Wallets"), link("Download the whole statement (CSV)")), Kind.DOWNLOAD
    ),
    "dashboard.payouts_page": Visit((nav("Payouts"),)),
    "dashboard.payout_fee_preview": Visit(  # the request form asks as the amount is typed
        (nav("Payouts"), lambda page, world: typed_payout_amount(page)),
        Kind.FETCHED,
    ),
    "dashboard.payouts_csv": Visit(
        (nav("Payouts"), link("Download these payouts as CSV")), Kind.DOWNLOAD
    ),
    "dashboard.webhooks_page": Visit((nav("Webhooks"),)),
    "dashboard.webhook_deliveries_page": Visit(DELIVERY_LOG),
    "dashboard.webhook_deliveries_csv": Visit(
        (*DELIVERY_LOG, link("Download these deliveries as CSV")), Kind.DOWNLOAD
    ),
    "dashboard.webhook_delivery_page": Visit(
        (
            *DELIVERY_LOG,
            link_in("Test deliveries", lambda world: re.compile("^" + world.say("View"))),
        )
    ),
    "dashboard.api_keys_page": Visit((nav("API keys"),)),
    "dashboard.back_office": Visit((nav("Back-office"),), who=Who.STAFF),
    "dashboard.dispute_operations": Visit((nav("Dispute desk"),), who=Who.STAFF),
    "dashboard.psp_notices_page": Visit((nav("Live PSP"),), who=Who.STAFF),
    "checkout.page": Visit(checkout(PIX_AND_BOLETO)),
    "checkout.status": Visit(checkout(PIX_AND_BOLETO), Kind.FETCHED),  # checkout.js polls it
    "checkout.boleto_pdf": Visit(
        (*checkout(PIX_AND_BOLETO), link("Open the boleto (PDF)")), Kind.SHOWN_PDF
    ),
    "checkout.card_page": Visit(
        (*checkout(attrgetter("card_payment_id")), link("Continue to the card page"))
    ),
    "api-docs.openapi_swagger_ui": Visit(API_REFERENCE),
    "docs_assets.swagger_asset": Visit(API_REFERENCE, Kind.FETCHED),  # Swagger UI's files
}


@pytest.fixture(params=list(LOCALES))
def world(request, app, client, redis, monkeypatch, live_server, receiver) -> World:
    """Made after the live server starts, so the addresses the API gives out point at it;
    once per language."""
    shop = merchant(app, monkeypatch)
    owner = factories.make_member(app, shop.account_id, Role.OWNER)
    with app.app_context():
        webhook_endpoints.create_endpoint(
            shop.account_id, KeyMode.TEST, receiver.url, ["charge.created", "charge.paid"]
        )
        db.session.commit()
    paid = d.paid_charge(app, client, shop)
    fund(app, client, shop, 100_000)
    case = d.opened(client, shop, paid["id"])
    charges.held_for_review(client, shop.api_key)
    pix_and_boleto = payments.created(client, shop.api_key, paymentMethods=["PIX", "BOLETO"])
    card = payments.created(client, shop.api_key, paymentMethods=["CREDIT_CARD"], currency="EUR")
    payout_owner = payouts.Merchant(owner, bearer(login(client, owner)), shop.api_key)
    assert payouts.request(client, payout_owner).status_code == 201
    run_jobs(app, redis)  # the payments' finalisation and the webhook deliveries
    assert receiver.received, "no webhook delivery was made"
    return World(
        owner=owner,
        staff=factories.make_staff(app),
        paid_charge_id=paid["id"],
        case_id=case["id"],
        pix_and_boleto_payment_id=pix_and_boleto["id"],
        card_payment_id=card["id"],
        locale=request.param,
        translations=Translations.load(str(TRANSLATIONS), [request.param]),
    )


def _dashboard_endpoints(app) -> dict[str, str]:
    """Endpoint → address of every GET page under the prefixes (static files aside)."""
    return {
        rule.endpoint: rule.rule
        for rule in app.url_map.iter_rules()
        if "GET" in rule.methods and rule.rule.startswith(PREFIXES)
    }


def test_every_page_has_a_browser_test(app):
    pages = _dashboard_endpoints(app)
    missing = [
        f"page {endpoint} ({address}) has no browser test: add it to VISITS"
        for endpoint, address in sorted(pages.items())
        if endpoint not in VISITS
    ]
    gone = [
        f"VISITS has {endpoint}, which the app does not serve"
        for endpoint in VISITS
        if endpoint not in pages
    ]
    assert not missing + gone, "\n".join(missing + gone)


def test_every_page_passes_its_checks_in_a_browser(app, open_page, world):
    failures = [
        failure
        for who, tab, log in _browsers(app, open_page, world)
        for endpoint, visit in VISITS.items()
        if visit.who is who and (failure := _visited(app, tab, log, world, endpoint, visit))
    ]
    assert not failures, f"{len(failures)} of {len(VISITS)} pages fail:\n" + "\n".join(failures)


def _browsers(app, open_page, world) -> Iterator[tuple[Who, "Page", BrowserLog]]:
    """The visitor's tab, which then signs in as the OWNER; then staff in a browser of their
    own; both asking for the world's language."""
    visitor = open_page("visitor", viewport=VIEWPORT, locale=LOCALES[world.locale])
    log = BrowserLog(app).listen(visitor)
    yield Who.NOBODY, visitor, log
    sign_in(visitor, world.owner, world.say)
    yield Who.OWNER, visitor, log
    staff = open_page("staff", viewport=VIEWPORT, locale=LOCALES[world.locale])
    staff_log = BrowserLog(app).listen(staff)
    sign_in(staff, world.staff, world.say)
    yield Who.STAFF, staff, staff_log


def _visited(app, tab, log: BrowserLog, world: World, endpoint: str, visit: Visit) -> str:
    """The visit's problems, under a line naming the page (empty when it passes)."""
    log.responses.clear()
    try:
        if visit.who in HOME:
            tab.goto(HOME[visit.who])  # where the clicks start from
        *before, last = visit.steps
        for step in before:
            step(tab, world)
        if visit.kind is Kind.DOWNLOAD:
            with tab.expect_download() as download:
                last(tab, world)
            reached = download.value
        else:
            last(tab, world)
            reached = None
            tab.wait_for_load_state("networkidle")
        address = tab.url
        problems = CHECKS[visit.kind](app, tab, log, world, endpoint, reached)
    except BrowserError as error:
        address = tab.url
        problems = [f"browser: {error.message.splitlines()[0]}"]
    if not problems:
        return ""
    return "\n".join(
        [f"{endpoint} ({visit.kind.value}) at {address}:"]
        + [f"  - {problem}" for problem in problems]
    )


def _page_checks(app, page, log: BrowserLog, world: World, endpoint: str, reached) -> list[str]:
    landed = endpoint_at(app, page.url)
    if landed != endpoint:
        return [f"reached: the browser ended on {landed} ({page.url}), not on {endpoint}"]
    return _checked_page(page, log, world, endpoint)


def _redirect_checks(app, page, log: BrowserLog, world: World, endpoint: str, reached) -> list[str]:
    problems = [
        f"redirect: {served.url} answered {served.status}, not a redirect"
        for served in log.served_by(endpoint)
        if not 300 <= served.status < 400
    ]
    if not log.served_by(endpoint):
        problems.append(f"reached: the browser never asked {endpoint}")
    return problems + _checked_page(page, log, world, endpoint)


def _download_checks(
    app, page, log: BrowserLog, world: World, endpoint: str, download
) -> list[str]:
    if endpoint_at(app, download.url) != endpoint:
        return [f"reached: the link downloaded {download.url}, not from {endpoint}"]
    if download.failure() is not None:
        return [f"download: failed ({download.failure()})"]
    name, body = download.suggested_filename, download.path().read_bytes()
    if name.endswith(".csv"):
        header = body.split(b"\n", 1)[0]
        return [] if b"," in header else [f"download: {name} has no CSV header ({header!r})"]
    if name.endswith(".pdf"):
        return [] if body.startswith(PDF_SIGNATURE) else [f"download: {name} is not a PDF"]
    return [f"download: {name} is neither a CSV nor a PDF"]


def _shown_pdf_checks(
    app, page, log: BrowserLog, world: World, endpoint: str, reached
) -> list[str]:
    problems = _served_checks(log, endpoint)
    for served in log.served_by(endpoint):
        if not served.document:
            continue  # the PDF viewer's own reading of it
        content_type = served.response.header_value("content-type")
        if content_type != "application/pdf":
            problems.append(f"pdf: {served.url} is {content_type}, not application/pdf")
    return problems


def _fetched_checks(app, page, log: BrowserLog, world: World, endpoint: str, reached) -> list[str]:
    if not log.served_by(endpoint):
        page.wait_for_event("response", lambda response: endpoint_at(app, response.url) == endpoint)
    return _served_checks(log, endpoint)


def _served_checks(log: BrowserLog, endpoint: str) -> list[str]:
    served = log.served_by(endpoint)
    if not served:
        return [f"reached: the browser never received anything from {endpoint}"]
    return [
        f"status: {response.status} for {response.url}"
        for response in served
        if response.status >= 400
    ]


def _checked_page(page, log: BrowserLog, world: World, endpoint: str) -> list[str]:
    """The page's checks; one in Portuguese must also have no English left on it."""
    folder = SCREENSHOTS / world.locale
    folder.mkdir(parents=True, exist_ok=True)
    english = english_left(page) if world.locale != "en" else []
    return page_problems(page, log, folder / f"{endpoint}.png") + english


CHECKS = {
    Kind.PAGE: _page_checks,
    Kind.REDIRECT: _redirect_checks,
    Kind.DOWNLOAD: _download_checks,
    Kind.SHOWN_PDF: _shown_pdf_checks,
    Kind.FETCHED: _fetched_checks,
}


BROKEN_PAGE = """<!doctype html>
<html>
<head><title>Broken</title></head>
<body>
  <nav><a href="/elsewhere">Navigation first, no skip link before it</a></nav>
  <h1>One</h1><h1>Two</h1>
  <input id="nameless" name="nameless">
  <div style="width: 2000px">Too wide</div>
  <img src="/no-such-image.png" alt="">
  <script>document.title = "ran";</script>
</body>
</html>"""


def test_the_checks_catch_a_page_that_breaks_each_rule(app, page, live_server, tmp_path):
    """A page served with a 404 under a CSP that forbids its inline script: each check
    answers, so a page passing them all is evidence and not silence."""
    page.set_viewport_size(VIEWPORT)
    log = BrowserLog(app).listen(page)
    page.route(
        f"{live_server}/broken",
        lambda route: route.fulfill(
            status=404,
            headers={"Content-Security-Policy": "script-src 'self'"},
            content_type="text/html",
            body=BROKEN_PAGE,
        ),
    )
    page.goto("/broken")
    page.wait_for_load_state("networkidle")

    problems = page_problems(page, log, tmp_path / "broken.png")

    failed = {problem.split(":", 1)[0] for problem in problems}
    assert failed == {
        "status",
        "html lang",
        "one h1",
        "labels",
        "horizontal scroll",
        "console",
        "skip link",
    }, problems
    text = "\n".join(problems)
    assert 'id="nameless"' in text and "2000px" in text and "2 visible h1" in text
    assert "CSP violation" in text and "no-such-image.png" in text
