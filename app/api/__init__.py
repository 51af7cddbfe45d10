"""The merchant JSON API (/v1): one flask-smorest blueprint per resource."""

from flask import Flask

from app.api import (
    api_keys,
    api_pix_webhook,
    auth,
    charges,
    disputes,
    docs,
    health,
    payments,
    pix_keys,
    wallets,
    webhooks,
    withdrawals,
)
from app.api.openapi_plugins import ApiKeyRateLimitPlugin
from app.api.security import SECURITY_SCHEMES
from app.extensions import api, csrf

RESOURCE_BLUEPRINTS = (
    health.blp,
    auth.blp,
    api_keys.blp,
    charges.blp,
    charges.pix_blp,
    charges.location_blp,
    charges.sandbox_blp,
    payments.blp,
    payments.sandbox_payments_blp,
    wallets.blp,
    pix_keys.blp,
    withdrawals.blp,
    withdrawals.admin_blp,
    webhooks.blp,
    *disputes.case_blueprints,
    disputes.sandbox_disputes_blp,
    api_pix_webhook.blp,
)


def register_api(app: Flask) -> None:
    api.init_app(app, spec_kwargs={"extra_plugins": [ApiKeyRateLimitPlugin()]})
    for name, scheme in SECURITY_SCHEMES.items():
        api.spec.components.security_scheme(name, scheme)
    for blueprint in RESOURCE_BLUEPRINTS:
        csrf.exempt(blueprint)  # API routes authenticate by header, not by cookie
        api.register_blueprint(blueprint)
    app.register_blueprint(docs.bp)
