"""Jinja filters and globals for every page: São Paulo time with the zone named, and money
in Brazilian notation from integer minor units."""

from datetime import datetime
from zoneinfo import ZoneInfo

from flask import Flask

from app.errors import current_request_id

DISPLAY_TIMEZONE = ZoneInfo("America/Sao_Paulo")
CURRENCY_SYMBOLS = {"BRL": "R$", "EUR": "€", "USD": "US$"}


def local_datetime(value: datetime | None) -> str:
    """21/11/2026 20:59 (America/Sao_Paulo): merchants read times in Brasília time."""
    if value is None:
        return ""
    return value.astimezone(DISPLAY_TIMEZONE).strftime("%d/%m/%Y %H:%M (America/Sao_Paulo)")


def money(amount: int | None, currency: str = "BRL") -> str:
    """123456 → R$ 1.234,56 (integer arithmetic: no float ever touches an amount)."""
    if amount is None:
        return ""
    sign = "-" if amount < 0 else ""
    units, cents = divmod(abs(amount), 100)
    grouped = f"{units:,}".replace(",", ".")
    symbol = CURRENCY_SYMBOLS.get(currency, currency)
    return f"{sign}{symbol} {grouped},{cents:02d}"


def register_templating(app: Flask) -> None:
    app.add_template_filter(local_datetime)
    app.add_template_filter(money)

    @app.context_processor
    def request_context():
        return {"request_id": current_request_id()}
