"""Content Security Policy (issue 10): no page allows inline style or script, the API
reference (Swagger UI) included; `tests/browser/test_every_page.py` shows in a real browser
that no page breaks that policy."""

import re

import pytest

from app.config import PROJECT_ROOT

INLINE_STYLE_OR_SCRIPT = re.compile(r"<style|\sstyle=|<script(?![^>]*\ssrc=)", re.IGNORECASE)


@pytest.mark.parametrize("path", ["/dashboard/login", "/v1/docs", "/healthz"])
def test_no_page_allows_inline_style_or_script(client, path):
    response = client.get(path)
    assert response.status_code == 200
    directives = response.headers["Content-Security-Policy"].split(";")
    policy = dict(d.strip().split(" ", 1) for d in directives if d.strip())
    assert policy["style-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"


def test_no_template_carries_an_inline_style_or_script():
    offenders = [
        str(path.relative_to(PROJECT_ROOT))
        for path in PROJECT_ROOT.joinpath("templates").rglob("*.html")
        if INLINE_STYLE_OR_SCRIPT.search(path.read_text())
    ]
    assert offenders == []
