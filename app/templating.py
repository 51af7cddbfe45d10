"""Jinja filters and globals for every page: São Paulo time with the zone named, a boleto's
due date as a day, money from integer minor units and percentages in Brazilian notation, and
a CPF or CNPJ punctuated as it is printed."""

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from flask import Flask
from markupsafe import Markup

from app.errors import current_request_id
from app.formats.money import format_money
from app.formats.numbers import format_percent
from app.methods import boleto
from app.pix import documents

DISPLAY_TIMEZONE = ZoneInfo("America/Sao_Paulo")
ZONE_NAMED = "(America/Sao_Paulo)"
# Where an address may wrap: after `//`, and before `/ . ? # & =` unless just after `/` or `:`.
URL_BREAK = re.compile(r"(?<=//)(?=[^/])|(?<=[^/:])(?=[/.?#&=])")


def local_datetime(value: datetime | None) -> str:
    """21/11/2026 20:59 (America/Sao_Paulo): merchants read times in Brasília time."""
    if value is None:
        return ""
    return value.astimezone(DISPLAY_TIMEZONE).strftime(f"%d/%m/%Y %H:%M {ZONE_NAMED}")


def local_time_element(value: datetime | None) -> Markup:
    """`local_datetime` for pages: a <time> with the exact instant for machines, and the zone
    kept on one line (a narrow column wraps before it, never inside it)."""
    if value is None:
        return Markup("")
    local = value.astimezone(DISPLAY_TIMEZONE)
    return Markup('<time datetime="{}">{} <span class="zone">{}</span></time>').format(
        local.isoformat(timespec="seconds"), local.strftime("%d/%m/%Y %H:%M"), ZONE_NAMED
    )


def money(amount: int | None, currency: str = "BRL") -> str:
    """123456 → R$ 1.234,56 (`format_money`); a missing amount shows as nothing."""
    return "" if amount is None else format_money(amount, currency)


def breakable_url(url: str) -> Markup:
    """The address with a line-break opportunity (`<wbr>`) between its parts, so a narrow
    cell wraps it at a slash or a dot instead of every few characters."""
    return Markup("<wbr>").join(URL_BREAK.split(url))


def register_templating(app: Flask) -> None:
    app.add_template_filter(local_time_element, "local_datetime")
    app.add_template_filter(boleto.formatted_due_date, "boleto_due_date")
    app.add_template_filter(money)
    app.add_template_filter(format_percent, "percent")
    app.add_template_filter(documents.formatted, "tax_id")
    app.add_template_filter(breakable_url)

    @app.context_processor
    def request_context():
        return {"request_id": current_request_id()}
