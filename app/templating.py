"""Jinja filters and globals for every page: the account's time with the zone named, a boleto's
due date as a day, money from integer minor units and percentages in the page's locale
(`app.i18n`), and a CPF or CNPJ punctuated as it is printed."""

import enum
import re
from datetime import date, datetime
from decimal import Decimal

from flask import Flask
from flask_babel import get_locale, get_timezone, gettext
from markupsafe import Markup

from app.errors import ApiError, current_request_id
from app.formats import labels
from app.formats.money import Amount, localized_money
from app.formats.numbers import format_percent
from app.marks import Sentences
from app.methods import boleto
from app.pix import documents

ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
SHORT_ID_LENGTH = 8
MAX_ID_PREFIX_LENGTH = 4  # ch_, tx_, med_
# Where an address may wrap: after `//`, and before `/ . ? # & =` unless just after `/` or `:`.
URL_BREAK = re.compile(r"(?<=//)(?=[^/])|(?<=[^/:])(?=[/.?#&=])")


def local_datetime(value: datetime | None) -> str:
    """21/11/2026 20:59 (America/Sao_Paulo): people read times in their account's zone
    (`i18n.select_timezone`: Brasília time in Brazil, Lisbon's in Portugal), named."""
    if value is None:
        return ""
    zone = get_timezone()
    return value.astimezone(zone).strftime(f"%d/%m/%Y %H:%M ({zone.key})")


def local_time_element(value: datetime | None) -> Markup:
    """`local_datetime` for pages: a <time> with the exact instant for machines, and the zone
    kept on one line (a narrow column wraps before it, never inside it)."""
    if value is None:
        return Markup("")
    zone = get_timezone()
    local = value.astimezone(zone)
    return Markup('<time datetime="{}">{} <span class="zone">({})</span></time>').format(
        local.isoformat(timespec="seconds"), local.strftime("%d/%m/%Y %H:%M"), zone.key
    )


def money(amount: int | None, currency: str = "BRL") -> str:
    """123456 → R$ 1.234,56 in pt_BR (`localized_money`); a missing amount shows as nothing."""
    return "" if amount is None else localized_money(amount, currency, str(get_locale()))


def percent(rate: float) -> str:
    """0.6667 → 66,7% in pt_BR, 66.7% in en."""
    return format_percent(rate, str(get_locale()))


def percentage(value: float) -> str:
    """A number of percent as typed (a due date's 2.5) → 2,5% in pt_BR: its own decimals,
    two at most, none added."""
    exact = Decimal(str(value)).normalize()
    decimals = min(max(-exact.as_tuple().exponent, 0), 2)
    return format_percent(float(exact) / 100, str(get_locale()), decimals)


def day_first(text: str) -> str:
    """`2026-11-21` → `21/11/2026`, as a date field shows a day; anything else as it is
    (what someone typed, shown back beside its problem)."""
    if not ISO_DAY.fullmatch(text):
        return text
    try:
        return date.fromisoformat(text).strftime("%d/%m/%Y")
    except ValueError:  # 2026-02-30
        return text


def short_id(record_id: str) -> str:
    """`ch_3f1c9a7e-…` → `ch_3f1c9a7e`: a list shows an id's prefix and first 8 characters
    (enough to tell rows apart and to find one with the search box), the page the full id."""
    prefix, underscore, rest = record_id.partition("_")
    if underscore and len(prefix) <= MAX_ID_PREFIX_LENGTH:
        return f"{prefix}_{rest[:SHORT_ID_LENGTH]}"
    return record_id[:SHORT_ID_LENGTH]


def zone_name() -> str:
    """The zone times and day filters are in (`America/Sao_Paulo`), for hints beside them."""
    return get_timezone().key


def refusal_text(error: ApiError | None) -> str | None:
    """What a service refused, in the page's language: its marked English translated, its
    values written as the reader writes them (amounts by `localized_money`, statuses by their
    labels). The API sends the same refusal in English (`error.message`); a message nobody
    marked stays English. None (an allowance that refused nothing) stays None."""
    if error is None:
        return None
    text = gettext(error.template)
    if not error.values:
        return text
    return text % {name: _written(value) for name, value in error.values.items()}


def _written(value: object) -> str:
    if isinstance(value, Amount):
        return localized_money(*value, str(get_locale()))
    if isinstance(value, enum.Enum):
        return labels.label(value)
    if isinstance(value, Sentences):
        return "; ".join(gettext(sentence) for sentence in value)
    return str(value)


def breakable_url(url: str) -> Markup:
    """The address with a line-break opportunity (`<wbr>`) between its parts, so a narrow
    cell wraps it at a slash or a dot instead of every few characters."""
    return Markup("<wbr>").join(URL_BREAK.split(url))


def register_templating(app: Flask) -> None:
    app.add_template_filter(local_time_element, "local_datetime")
    app.add_template_filter(boleto.formatted_due_date, "boleto_due_date")
    app.add_template_filter(money)
    app.add_template_filter(percent)
    app.add_template_filter(percentage)
    app.add_template_filter(documents.formatted, "tax_id")
    app.add_template_filter(breakable_url)
    app.add_template_filter(short_id)
    app.add_template_filter(day_first)
    app.add_template_filter(refusal_text, "refusal")

    app.add_template_global(zone_name)

    @app.context_processor
    def request_context():
        return {"request_id": current_request_id()}
