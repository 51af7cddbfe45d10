"""The live PSP's webhook (the Banco Central's API Pix): `POST {webhookUrl}/pix`.

Our webhookUrl, registered at the PSP with `PUT /webhook/{chave}`, is
`{PUBLIC_BASE_URL}/v1/api-pix/webhook/<API_PIX_WEBHOOK_SECRET>`, so the PSP calls
`/v1/api-pix/webhook/<secret>/pix` with `{"pix": [...]}` for each Pix paid with a txid and
again when a devolução ends (`DEVOLVIDO`, `NAO_REALIZADO`).

Authentication, in depth: the standard requires mutual TLS on this call; it is terminated in
front of the service (deploy/nginx/acme.conf verifies the PSP's client certificate against
the PSP's CA on this path), so no certificate reaches Flask. Behind it, the path secret is
compared in constant time; an empty setting or a wrong secret answers the same 404 as an
unknown route. The request log shows the secret's segment as `***` (`app.logs`); outside
development it must have at least 32 characters
(`providers/api_pix/settings_check.validate_api_pix`). And the body is never believed: every
Pix it names is confirmed with the PSP before anything is credited
(`api_pix_inbound.apply_webhook`), so a forged call that passed both credits nothing. No API
key, no cookie, so no CSRF token either.

The answer is 200 `{}` once everything the call reports is applied and committed (one
database transaction per call), including for Pix that match no charge of ours or that the
PSP does not confirm (both are back-office notices), so the PSP stops retrying them. A body
that is not the standard's shape is 400; a PSP outage met while confirming or returning a Pix
is 503, so the PSP delivers the call again (every step is idempotent).
"""

import hmac

from flask import current_app, request
from flask.views import MethodView

from app.errors import NotFound, ServiceUnavailable
from app.extensions import Blueprint, db
from app.providers.base import ProviderError
from app.services import api_pix_inbound

blp = Blueprint(
    "api_pix_webhook",
    __name__,
    url_prefix="/v1/api-pix/webhook",
    description="Live PSP callbacks (API Pix webhook; mutual TLS and a path secret)",
)


@blp.route("/<secret>/pix")
class ApiPixWebhook(MethodView):
    @blp.doc(security=[])
    @blp.response(200)
    @blp.errors(400, 404, 503)
    def post(self, secret):
        """Received Pix and devoluções reported by the live PSP (its calls only)."""
        if not _is_our_secret(secret):
            raise NotFound("No such route or resource.")
        try:
            api_pix_inbound.apply_webhook(request.get_json(force=True, silent=True))
        except ProviderError as error:
            raise ServiceUnavailable(
                "The PSP could not be reached while applying this call; deliver it again.",
                code="provider_unavailable",
            ) from error
        db.session.commit()
        return {}


def _is_our_secret(secret: str) -> bool:
    expected = current_app.config.get("API_PIX_WEBHOOK_SECRET") or ""
    return bool(expected) and hmac.compare_digest(secret.encode(), expected.encode())
