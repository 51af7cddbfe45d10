"""Acme Pay: the application factory reads as a table of contents of the service."""

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from app.config import PROJECT_ROOT, instance_path, load_settings


def create_app(config: dict | None = None) -> Flask:
    # Imported here: the checks load the parts whose settings they check.
    from app.settings_checks import validate_settings

    app = Flask(
        __name__,
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "static"),
        instance_path=str(instance_path()),
    )
    app.config.update(load_settings())
    app.config.update(config or {})
    validate_settings(app.config)
    app.json.sort_keys = False
    trust_proxies(app)

    register_logging(app)
    register_monitoring(app)
    register_extensions(app)
    register_blueprints(app)
    register_errorhandlers(app)
    register_commands(app)
    return app


def trust_proxies(app: Flask) -> None:
    """Behind TRUSTED_PROXY_HOPS proxies, the client's address and scheme are the ones they
    forward (X-Forwarded-For, -Proto), not the last proxy's; sign-in throttling and the logs
    count clients, not the load balancer. With none, forwarded headers are ignored, so a client
    cannot choose its own address. The host is never taken from them (PUBLIC_BASE_URL is)."""
    hops = app.config["TRUSTED_PROXY_HOPS"]
    if hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)


def register_logging(app: Flask) -> None:
    from app.logs import configure_logging, register_request_log

    configure_logging(app.config["LOG_LEVEL"])
    register_request_log(app)


def register_monitoring(app: Flask) -> None:
    from app.monitoring import register_metrics

    register_metrics(app)


def register_extensions(app: Flask) -> None:
    from app import models  # noqa: F401 (every table known to SQLAlchemy and Alembic)
    from app.cookie_sessions import register_cookie_sessions
    from app.extensions import csrf, db, login_manager, migrate
    from app.i18n import register_i18n
    from app.services.transactions import payment_totals  # noqa: F401 (its flush hook)

    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        instance_path().mkdir(parents=True, exist_ok=True)
    db.init_app(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"))
    login_manager.init_app(app)
    register_cookie_sessions(app)
    csrf.init_app(app)
    register_i18n(app)


def register_blueprints(app: Flask) -> None:
    from app.api import register_api
    from app.checkout import register_checkout
    from app.dashboard import register_dashboard
    from app.security_headers import register_security_headers
    from app.storage.routes import register_storage
    from app.templating import register_templating

    register_api(app)
    register_dashboard(app)
    register_checkout(app)
    register_storage(app)
    register_templating(app)
    register_security_headers(app)


def register_errorhandlers(app: Flask) -> None:
    from app.errors import register_error_handlers

    register_error_handlers(app)


def register_commands(app: Flask) -> None:
    from app.cli import register_cli

    register_cli(app)
