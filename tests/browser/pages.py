"""What every HTML page must pass in a real browser, measured on the page as rendered:
`<html lang>`, one visible `<h1>`, a label for every visible form field, no horizontal scroll
and no table wider than its card at a 1280 by 800 window, on a page with navigation a skip
link that is the first Tab stop and moves focus to `#main`, no console errors or Content
Security Policy violations, and a status below 400.

`BrowserLog` listens to a tab from its first page on; `page_problems` reads it and the page,
and answers each failed check as "check: detail" (an empty list when the page passes).
"""

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from flask import Flask
from werkzeug.exceptions import HTTPException

VIEWPORT = {"width": 1280, "height": 800}
CSP = "Content Security Policy"
# Form fields a person types in or chooses from; button-like inputs are named by their value.
FORM_FIELDS = (
    "input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=reset])"
    ":not([type=image]), select, textarea"
)
UNLABELLED_FIELDS = """fields => fields
  .filter(field => field.checkVisibility())
  .filter(field => !(
    field.labels.length
    || (field.getAttribute("aria-label") || "").trim()
    || (field.getAttribute("aria-labelledby") || "").split(/\\s+/)
         .some(id => (document.getElementById(id)?.textContent || "").trim())))
  .map(field => `<${field.tagName.toLowerCase()}`
    + (field.id ? ` id="${field.id}"` : "") + (field.name ? ` name="${field.name}"` : "")
    + (field.type ? ` type="${field.type}"` : "") + ">")"""
# The outermost elements reaching past the window's right edge, widest first, with the
# heading of the section they are in.
OVERFLOW = """() => {
  const width = window.innerWidth;
  const wide = element => element.getBoundingClientRect().right > width + 0.5;
  const named = element => element.tagName.toLowerCase()
    + (element.id ? "#" + element.id : "")
    + [...element.classList].map(name => "." + name).join("");
  const offenders = [...document.body.querySelectorAll("*")]
    .filter(element => wide(element) && !wide(element.parentElement))
    .map(element => {
      const heading = element.closest("section")?.querySelector("h1, h2, h3");
      const box = element.getBoundingClientRect();
      return {
        text: named(element) + (heading ? ` in "${heading.textContent.trim()}"` : ""),
        right: Math.round(box.right),
        width: Math.round(box.width),
      };
    })
    .sort((a, b) => b.right - a.right);
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: width,
    offenders: offenders.slice(0, 3),
  };
}"""
# Every visible table whose right edge is past the right edge of the content of the card it
# is in (its right padding aside), or of the window when it is in none: a column cut off, or
# reached only by scrolling the card sideways. Each with its section's heading, how far past,
# and the headers of the columns that begin or end out there.
TABLES_PAST_THEIR_CARDS = """() => [...document.querySelectorAll("table")]
  .filter(table => table.checkVisibility())
  .map(table => {
    const card = table.closest(".card");
    let edge = window.innerWidth;
    if (card) {
      const box = card.getBoundingClientRect();
      const padding = parseFloat(getComputedStyle(card).paddingRight);
      edge = Math.min(edge, box.left + card.clientLeft + card.clientWidth - padding);
    }
    const heading = table.closest("section")?.querySelector("h1, h2, h3");
    const cut = [...table.querySelectorAll("thead th")]
      .filter(cell => cell.getBoundingClientRect().right > edge + 0.5)
      .map(cell => cell.textContent.trim() || "(unnamed)");
    return {
      where: heading ? `"${heading.textContent.trim()}"` : "the page",
      container: card ? "card" : "window",
      right: table.getBoundingClientRect().right,
      edge,
      cut,
    };
  })
  .filter(table => table.right > table.edge + 0.5)"""
# Where a keyboard user starts: the top of the document, not a field that took focus itself
# (`autofocus`); the document element is made focusable just long enough to start there.
FROM_THE_TOP = """() => {
  const root = document.documentElement;
  root.tabIndex = -1;
  root.focus();
  root.removeAttribute("tabindex");
}"""
FOCUSED = """() => {
  const element = document.activeElement;
  if (!element || element === document.body) return null;
  return {
    href: element.getAttribute("href"),
    id: element.id,
    text: (element.textContent || element.value || "").trim().slice(0, 60),
    tag: element.tagName.toLowerCase(),
  };
}"""


def endpoint_at(app: Flask, url: str) -> str | None:
    """The app's GET endpoint serving `url`, if any (another site, a 404 or a POST: None)."""
    parts = urlsplit(url)
    try:
        endpoint, _ = app.url_map.bind(parts.netloc or "localhost").match(parts.path, "GET")
    except HTTPException:  # no such page, another method, or a slash redirect
        return None
    return endpoint


@dataclass(frozen=True)
class Served:
    """One response the tab received, and which endpoint served it."""

    endpoint: str | None
    url: str
    status: int
    document: bool  # the tab's own page (a navigation), not something it loaded
    response: object  # Playwright's, for its headers


@dataclass
class BrowserLog:
    """The responses a tab received, and the console errors, uncaught exceptions and CSP
    violations of the page it shows now (moving to another page starts a new list; moving
    within the page, to `#main` say, does not)."""

    app: Flask
    responses: list[Served] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    _address: str = ""

    def listen(self, page) -> "BrowserLog":
        page.on("response", lambda response: self._received(page, response))
        page.on("console", self._logged)
        page.on("pageerror", lambda error: self.console.append(f"uncaught exception: {error}"))
        page.on("framenavigated", lambda frame: self._navigated(page, frame))
        return self

    def served_by(self, endpoint: str) -> list[Served]:
        return [served for served in self.responses if served.endpoint == endpoint]

    def _received(self, page, response) -> None:
        request = response.request
        self.responses.append(
            Served(
                endpoint=endpoint_at(self.app, response.url),
                url=response.url,
                status=response.status,
                document=request.is_navigation_request() and response.frame == page.main_frame,
                response=response,
            )
        )

    def _logged(self, message) -> None:
        if CSP in message.text:
            self.console.append(f"CSP violation: {message.text}")
        elif message.type == "error":
            source = message.location.get("url") or ""
            self.console.append(f"console error: {message.text} ({source})")

    def _navigated(self, page, frame) -> None:
        address = frame.url.split("#", 1)[0]
        if frame == page.main_frame and address != self._address:
            self._address = address
            self.console.clear()


def page_problems(page, log: BrowserLog, screenshot) -> list[str]:
    """Every check the page fails, as "check: detail"; the page is saved to `screenshot`
    (a path) between the layout checks and the keyboard one, which moves the focus."""
    problems = []
    document = [served for served in log.responses if served.document]
    if document and document[-1].status >= 400:
        problems.append(f"status: {document[-1].status} for {document[-1].url}")
    lang = page.evaluate("document.documentElement.lang")
    if not lang.strip():
        problems.append("html lang: <html> has no lang attribute")
    headings = page.get_by_role("heading", level=1).all_inner_texts()
    if len(headings) != 1:
        problems.append(f"one h1: {len(headings)} visible h1 headings {headings}")
    unlabelled = page.locator(FORM_FIELDS).evaluate_all(UNLABELLED_FIELDS)
    if unlabelled:
        problems.append("labels: no accessible label on " + ", ".join(unlabelled))
    problems += _overflow_problems(page)
    problems += tables_past_their_cards(page)
    problems += [f"console: {message}" for message in log.console]
    page.screenshot(path=screenshot, full_page=True)
    problems += _skip_link_problems(page)
    return problems


def _overflow_problems(page) -> list[str]:
    layout = page.evaluate(OVERFLOW)
    if layout["scrollWidth"] <= layout["innerWidth"]:
        return []
    offenders = "; ".join(
        f"{offender['text']} is {offender['width']}px wide, its right edge at {offender['right']}px"
        for offender in layout["offenders"]
    )
    return [
        f"horizontal scroll: the page is {layout['scrollWidth']}px wide in a "
        f"{layout['innerWidth']}px window ({offenders or 'no single element found'})"
    ]


def tables_past_their_cards(page) -> list[str]:
    """Each table of the page that does not fit in its card (or the window), as "table:
    detail"; measure at the width that matters (`VIEWPORT`)."""
    return [
        f"table: the table in {table['where']} reaches {round(table['right'])}px, past its "
        f"{table['container']}'s edge at {round(table['edge'])}px"
        + (f" (cut off: {', '.join(table['cut'])})" if table["cut"] else "")
        for table in page.evaluate(TABLES_PAST_THEIR_CARDS)
    ]


def _skip_link_problems(page) -> list[str]:
    """A page with navigation to skip starts with a link past it (WCAG 2.4.1); a page
    without any (the payer's checkout, the API reference) has nothing to bypass."""
    if page.locator("nav").count() == 0:
        return []
    page.evaluate(FROM_THE_TOP)
    page.keyboard.press("Tab")
    first = page.evaluate(FOCUSED)
    if first is None or first["tag"] != "a" or first["href"] != "#main":
        return [f"skip link: the first Tab stop is {_described(first)}, not a link to #main"]
    page.keyboard.press("Enter")
    focused = page.evaluate(FOCUSED)
    if focused is None or focused["id"] != "main":
        return [f"skip link: following it focuses {_described(focused)}, not #main"]
    return []


def _described(focused: dict | None) -> str:
    if focused is None:
        return "nothing (the page has no focusable element)"
    text = f' "{focused["text"]}"' if focused["text"] else ""
    where = f' href="{focused["href"]}"' if focused["href"] else ""
    return f"<{focused['tag']}{where}>{text}"


# Words English sentences are made of and Portuguese never uses ("for" is Portuguese too: "se
# o pagador for confirmado"); a page that should be in Portuguese and shows one, in lowercase
# or capitalized (codes such as PAID are not words), outside code, ids, addresses and typed
# values, has English left.
ENGLISH = (
    "the and of your you is are with this from will has have been not was be to or in on at by"
    " an payment payments payout payouts dispute disputes wallet wallets refund amount pending"
    " paid created open"
)
ENGLISH_WORDS = re.compile(
    r"\b(?:"
    + "|".join(f"[{word[0].upper()}{word[0]}]{word[1:]}" for word in ENGLISH.split())
    + r")\b"
)
# The page's words a person reads: the visible text, less what is a machine's (code, ids in
# <code>, sample payloads, e-mail addresses, web addresses), with each text node's element.
READ_TEXT = """() => {
  const skip = "code, pre, kbd, samp, script, style, [translate=no], .swagger-ui";
  const machine = /\\S+@\\S+|https?:\\/\\/\\S+|\\S*[a-z_]\\.[a-z]\\S*|end-to-end/gi;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!element || element.closest(skip) || !element.checkVisibility()) continue;
    const text = node.textContent.replace(machine, " ");
    if (text.trim()) texts.push(text.trim());
  }
  for (const field of document.querySelectorAll("[placeholder], [aria-label], [title]")) {
    if (!field.closest(skip)) {
      for (const name of ["placeholder", "aria-label", "title"]) {
        const value = field.getAttribute(name);
        if (value && value.replace(machine, " ").trim()) texts.push(value.replace(machine, " "));
      }
    }
  }
  return texts;
}"""


def english_left(page) -> list[str]:
    """The page's texts that still read as English, as "english: …" problems."""
    found = sorted({text for text in page.evaluate(READ_TEXT) if ENGLISH_WORDS.search(text)})
    return [f"english: {text[:120]!r}" for text in found]
