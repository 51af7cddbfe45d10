"""Jinja filters and globals for every page: São Paulo time with the zone named."""

from datetime import datetime
from zoneinfo import ZoneInfo

from flask import Flask

from app.errors import current_request_id

DISPLAY_TIMEZONE = ZoneInfo("America/Sao_Paulo")


def local_datetime(value: datetime | None) -> str:
    """21/11/2026 20:59 (America/Sao_Paulo): merchants read times in Brasília time."""
    if value is None:
        return ""
    return value.astimezone(DISPLAY_TIMEZONE).strftime("%d/%m/%Y %H:%M (America/Sao_Paulo)")


def register_templating(app: Flask) -> None:
    app.add_template_filter(local_datetime)

    @app.context_processor
    def request_context():
        return {"request_id": current_request_id()}
