"""Browser tests: the dashboard served by a real HTTP server in this process (the test app,
its database and Redis) and driven by Playwright in Debian's Chromium, headless.

They skip, saying why, only when Playwright or Chromium cannot be had (`./scripts/test`
installs Chromium when it runs as root with apt-get). Every test leaves a screenshot of its
last page in `test-results/browser/`, kept by CI with its log.
"""

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.serving import make_server

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
    """A fresh browser context (no cookies) on the live server; its last page is saved."""
    context = browser.new_context(base_url=live_server)
    context.set_default_timeout(10_000)
    tab = context.new_page()
    yield tab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / f"{request.node.name}.png", full_page=True)
    context.close()


def sign_in(page, member) -> None:
    page.goto("/dashboard/login")
    page.get_by_label("E-mail").fill(member.email)
    page.get_by_label("Password").fill(member.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/dashboard/**")
