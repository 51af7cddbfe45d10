"""Browser tests: the dashboard served by a real HTTP server in this process (the test app,
its database and Redis) and driven by Playwright in Debian's Chromium, headless.

They skip, saying why, only when Playwright or Chromium cannot be had (`./scripts/test`
installs Chromium when it runs as root with apt-get). Every test leaves a screenshot of the
last page of each of its tabs in `test-results/browser/`, kept by CI with its log.
"""

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.serving import make_server

try:  # the tests' auto-waiting assertions; without Playwright, `browser` skips them first
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover
    expect = None
else:
    expect.set_options(timeout=10_000)  # as long as actions wait (the contexts' default)

__all__ = ["click_confirming", "expect", "sign_in"]

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


@pytest.fixture
def live_server(app, monkeypatch) -> Iterator[str]:
    """The test app on a free port; signed storage addresses point at it too."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", base)
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base
    server.shutdown()
    thread.join()


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
    context = browser.new_context(base_url=base_url, **options)
    context.set_default_timeout(10_000)
    return context


def _save(context, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for number, tab in enumerate(context.pages, start=1):
        suffix = "" if number == 1 else f"-{number}"
        tab.screenshot(path=SCREENSHOTS / f"{name}{suffix}.png", full_page=True)


def sign_in(page, member) -> None:
    page.goto("/dashboard/login")
    page.get_by_label("E-mail").fill(member.email)
    page.get_by_label("Password").fill(member.password)
    page.get_by_role("button", name="Sign in").click()
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
