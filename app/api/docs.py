"""Serves the Swagger UI assets from the installed swagger-ui-bundle (no CDN at run time)."""

from flask import Blueprint, send_from_directory
from swagger_ui_bundle import swagger_ui_path

bp = Blueprint("docs_assets", __name__)


@bp.get("/v1/docs/assets/<path:filename>")
def swagger_asset(filename: str):
    return send_from_directory(str(swagger_ui_path), filename, max_age=86400)
