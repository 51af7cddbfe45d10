"""Browser tests: the dashboard served by the deployed stack (tests/support/deployed.py: the
Procfile's gunicorn, worker, webhooks and cron processes) and driven by Playwright in Debian's
Chromium, headless. Their data is made with tests/support/factories through `app`, here an app
bound to the stack's own database and Redis; after each test the stack's tables are emptied and
its demo merchant seeded again, so the deployed tests still find it.

They skip, saying why, only when Playwright or Chromium cannot be had (`./scripts/test`
installs Chromium when it runs as root with apt-get). Every test leaves a screenshot of the
last page of each of its tabs in `test-results/browser/`, kept by CI with its log.
"""

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from app import create_app
from app.config import engine_options
from app.extensions import QUEUE_NAMES, db, get_queue, get_redis
from app.models import SettlementRelease
from app.services import releases
from tests.support import payouts
from tests.support.deployed import PUBLIC_BASE_URL, REQUEST_SECONDS
from tests.support.http import READER_LANGUAGE
from tests.support.processes import wait_for
from tests.support.queues import idle
from tests.support.rows import empty_tables

try:  # the tests' auto-waiting assertions; without Playwright, `browser` skips them first
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover
    expect = None
else:
    expect.set_options(timeout=10_000)  # as long as actions wait (the contexts' default)

__all__ = ["click_confirming", "expect", "run_jobs", "sign_in"]

JOBS_SECONDS = 15
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "browser"


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright is not installed (requirements-dev.txt)"
    )
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("No Chromium: install Debian's chromium (./scripts/test does as root)")
    with sync_api.sync_playwright() as playwright:
        # Root (CI) cannot use Chromium's sandbox; the pages are our own.
        chromium = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def app(deployed):
    """Overrides tests/conftest.py's `app` for the browser tests: the same test settings, on
    the stack's database and Redis, with the stack's secret key and public address (so what
    it signs, the stack accepts)."""
    instance = deployed.settings["INSTANCE_PATH"]
    previous = os.environ.get("INSTANCE_PATH")
    os.environ["INSTANCE_PATH"] = instance
    try:
        return create_app(
            {
                "APP_ENV": "testing",
                "TESTING": True,
                "SQLALCHEMY_DATABASE_URI": deployed.database_url,
                "SQLALCHEMY_ENGINE_OPTIONS": engine_options(deployed.database_url),
                "REDIS_URL": deployed.redis_url,
                "PUBLIC_BASE_URL": PUBLIC_BASE_URL,
                "SECRET_KEY": deployed.settings["SECRET_KEY"],
                "WEBHOOK_ALLOW_PRIVATE_TEST_URLS": True,  # receivers run on localhost
            }
        )
    finally:
        if previous is None:
            os.environ.pop("INSTANCE_PATH", None)
        else:
            os.environ["INSTANCE_PATH"] = previous


@pytest.fixture(autouse=True)
def _empty_tables(app, deployed):
    """Overrides tests/conftest.py's: the stack's tables are emptied, then the demo merchant
    seeded again (`deployed.seed` holds its new keys)."""
    yield
    empty_tables(app)
    deployed.reseed()


@pytest.fixture(autouse=True)
def _released_by_the_stack(monkeypatch):
    """The stack's cron releases due settlement tranches every second, so the helpers'
    in-process `release_due` (tests/support/refunds.py's `release`, `funded_merchant`) would
    race it: here it waits for the stack to have released every due tranche instead."""

    def release_due(now=None, batch_size=100) -> int:
        def nothing_due() -> bool:
            db.session.rollback()  # a fresh snapshot each time
            due = sa.select(sa.func.count()).where(
                SettlementRelease.released_at.is_(None),
                SettlementRelease.release_at <= (now or releases.utcnow()),
            )
            return db.session.scalar(due) == 0

        wait_for(nothing_due, JOBS_SECONDS, "the stack's cron to release due settlements")
        return 0

    monkeypatch.setattr(releases, "release_due", release_due)


@pytest.fixture
def redis(app):
    """The stack's Redis, not emptied: its worker processes keep their queues there."""
    with app.app_context():
        connection = get_redis()
    yield connection


@pytest.fixture
def live_server(deployed) -> Iterator[str]:
    """The stack's web process."""
    return deployed.base


@pytest.fixture
def page(browser, live_server, request):
    """A fresh browser context (no cookies) on the live server; its last page is saved, and
    any other tab the test opened in it as `<test>-2.png`, `<test>-3.png`…"""
    context = _context(browser, live_server)
    tab = context.new_page()
    yield tab
    _save(context, request.node.name)
    context.close()


@pytest.fixture
def open_page(browser, live_server, request):
    """`open_page(name, **options)`: a tab in another fresh context, with cookies of its own
    (a second user signed in beside `page`, say); `options` go to `browser.new_context`
    (`permissions=["clipboard-read"]`…). Its last page is saved as `<test>-<name>.png`."""
    opened = []

    def open_(name: str, **options):
        context = _context(browser, live_server, **options)
        opened.append((name, context))
        return context.new_page()

    yield open_
    for name, context in opened:
        _save(context, f"{request.node.name}-{name}")
        context.close()


def _context(browser, base_url: str, **options):
    options.setdefault("locale", READER_LANGUAGE)  # Accept-Language and the browser's own
    context = browser.new_context(base_url=base_url, **options)
    context.set_default_timeout(10_000)
    # Addresses on the public host (signed uploads, links) go to the stack's web process.
    context.route(re.compile("^" + re.escape(PUBLIC_BASE_URL) + "/"), _to(base_url))
    return context


def _to(base_url: str):
    def forward(route) -> None:
        sent = route.request
        # all_headers: `headers` leaves out the cookies.
        headers = {k: v for k, v in sent.all_headers().items() if not k.startswith(":")}
        headers.pop("host", None)
        answer = requests.request(
            sent.method,
            base_url + sent.url.removeprefix(PUBLIC_BASE_URL),
            headers=headers,
            data=sent.post_data_buffer,
            # Chromium does not follow a redirect fulfilled for a fetch: follow it here.
            allow_redirects=not sent.is_navigation_request(),
            timeout=REQUEST_SECONDS,
            stream=True,
        )
        body = answer.raw.read(decode_content=False)  # as sent: Content-Encoding stays
        returned = {}
        for name, value in answer.raw.headers.items():
            name = name.lower()
            returned[name] = f"{returned[name]}\n{value}" if name in returned else value
        route.fulfill(status=answer.status_code, headers=returned, body=body)

    return forward


def _save(context, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for number, tab in enumerate(context.pages, start=1):
        suffix = "" if number == 1 else f"-{number}"
        tab.screenshot(path=SCREENSHOTS / f"{name}{suffix}.png", full_page=True)


def sign_in(page, member, say=str) -> None:
    """Through the login form; `say` gives its words in the page's language."""
    page.goto("/dashboard/login")
    page.get_by_label(say("E-mail")).fill(member.email)
    page.get_by_label(say("Password")).fill(member.password)
    page.get_by_role("button", name=say("Sign in")).click()
    # Not "**/dashboard/**": the login page matches that too, so it would not wait at all.
    page.wait_for_url(lambda url: "/dashboard/login" not in url)


def click_confirming(page, button) -> str:
    """Click a button that asks first (app.js's `data-confirm`: Playwright would dismiss the
    question), answer OK, and return the question asked."""
    asked = []

    def accept(dialog):
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    button.click()
    assert asked, "The button asked nothing before acting."
    return asked[0]


def run_jobs(app, redis) -> None:
    """Run what is queued here (tests/support/payouts.py's `run_jobs`), then wait until the
    stack's own workers have finished what they took: nothing queued, nothing started."""
    payouts.run_jobs(app, redis)
    with app.app_context():
        queues = [get_queue(name) for name in QUEUE_NAMES]

    wait_for(lambda: idle(queues), JOBS_SECONDS, "the stack's workers to finish their jobs")
