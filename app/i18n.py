"""Which language a person reads a page in, and the notation of its figures.

Three locales: `pt_BR` (the default for accounts in Brazil), `pt_PT` (for accounts in
Portugal) and `en`. On the dashboard a member's own choice wins; before they make one, the
browser's `Accept-Language` decides, and a browser that asks for none of the three (or only
for a Portuguese without a country) gets its account's locale. The hosted checkout follows
the payer's browser the same way, never a member's choice. PDFs and e-mails are read away from
any browser, so they follow the account (`account_locale`). The JSON API always speaks English
(its error messages are written in English, whatever the caller's headers).

Figures follow the locale through Babel (`formats.money.localized_money`, the `percent`
filter). Times are written day first, 24-hour, in the account's own time: São Paulo for an
account in Brazil, Lisbon for one in Portugal (`select_timezone`, read by `templating` and by
the dashboard's day filters through Flask-Babel's `get_timezone`).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from zoneinfo import ZoneInfo

from flask import Flask, g, has_request_context, request
from flask_babel import Babel, force_locale, get_locale, refresh
from flask_login import current_user

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import Account

LOCALES = ("pt_BR", "pt_PT", "en")
DEFAULT_LOCALE = "pt_BR"
# Each name in its own language, as a language menu shows it.
LANGUAGE_NAMES = {"pt_BR": "Português (Brasil)", "pt_PT": "Português (Portugal)", "en": "English"}
COUNTRY_LOCALES = {"BR": "pt_BR", "PT": "pt_PT"}
HTML_LANG = {"pt_BR": "pt-BR", "pt_PT": "pt-PT", "en": "en"}
COUNTRY_ZONES = {"BR": SAO_PAULO, "PT": ZoneInfo("Europe/Lisbon")}

babel = Babel()


def account_locale(account: Account | None) -> str:
    """The language an account's documents are written in: its country's."""
    if account is None:
        return DEFAULT_LOCALE
    return COUNTRY_LOCALES.get(account.country, DEFAULT_LOCALE)


def account_zone(account: Account | None) -> ZoneInfo:
    """The time an account's people live in: its country's (São Paulo when unknown)."""
    if account is None:
        return SAO_PAULO
    return COUNTRY_ZONES.get(account.country, SAO_PAULO)


@contextmanager
def written_for(account: Account | None) -> Iterator[None]:
    """Write a document (PDF, e-mail) in the account's language and time, away from any
    browser: what `force_locale` does for the language, for both."""
    previous = g.get("written_zone")
    g.written_zone = account_zone(account)
    refresh()  # Flask-Babel keeps the request's zone until told
    try:
        with force_locale(account_locale(account)):
            yield
    finally:
        g.written_zone = previous
        refresh()


def select_locale() -> str:
    """Flask-Babel's choice for the request being served (see the module docstring)."""
    if not has_request_context():
        return DEFAULT_LOCALE  # a job: it names its account's locale with `force_locale`
    if request.blueprint != "checkout":
        chosen = getattr(current_user, "locale", None)
        if chosen in LOCALES:
            return chosen
    preferred = account_locale(_request_account())
    # The account's own locale first: a browser asking for a bare "pt" gets its country's.
    candidates = [preferred, *(locale for locale in LOCALES if locale != preferred)]
    return request.accept_languages.best_match(candidates) or preferred


def select_timezone() -> ZoneInfo:
    """Flask-Babel's zone for what is being written: a document's account's (`written_for`),
    else the request's account's (the member's on the dashboard, the charge's on the checkout).
    """
    if written := g.get("written_zone"):
        return written
    return account_zone(_request_account() if has_request_context() else None)


def _request_account() -> Account | None:
    """The account the request is for (`g.account_id`: the member's, or the checkout's
    charge's), or None before one is known (the login page)."""
    account_id = g.get("account_id")
    return db.session.get(Account, account_id) if account_id else None


def register_i18n(app: Flask) -> None:
    app.config.setdefault("BABEL_DEFAULT_LOCALE", DEFAULT_LOCALE)
    app.config.setdefault("BABEL_DEFAULT_TIMEZONE", SAO_PAULO.key)
    babel.init_app(app, locale_selector=select_locale, timezone_selector=select_timezone)

    @app.context_processor
    def page_language():
        """`<html lang>`: screen readers and the browser's own controls follow it."""
        return {"html_lang": HTML_LANG[str(get_locale())]}
