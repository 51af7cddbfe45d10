"""Webhooks (apikey): endpoints, the event catalog (public), the delivery log and resends.

Endpoints and deliveries belong to the key's mode: a test key manages test endpoints, which
receive test-mode events only.
"""

from flask import g
from flask.views import MethodView

from app.api.caller import committed_for_caller
from app.api.schemas.webhooks import (
    CatalogEntrySchema,
    DeletedSchema,
    DeliveryPageSchema,
    DeliveryQuerySchema,
    DeliverySchema,
    DeliveryStatsSchema,
    EndpointCreateSchema,
    EndpointListSchema,
    EndpointUpdatedSchema,
    EndpointUpdateSchema,
    EndpointWithSecretSchema,
    RecoveredSchema,
    RecoverSchema,
    RotateSecretSchema,
    SecretSchema,
)
from app.api.security import ApiKeyView
from app.errors import ErrorSchema, InvalidRequest
from app.extensions import Blueprint
from app.formats import event_catalog
from app.formats.webhooks import delivery_fields, endpoint_fields
from app.services.webhooks import endpoints as webhook_endpoints
from app.services.webhooks import log as delivery_log
from app.services.webhooks import relay

blp = Blueprint("webhooks", __name__, url_prefix="/v1/webhooks", description="Webhooks (apikey)")
# The one conflict registering or changing a URL can meet (`endpoints.create_endpoint`).
URL_TAKEN = {
    "schema": ErrorSchema,
    "description": f"conflict_error/{webhook_endpoints.URL_TAKEN}: another endpoint of the "
    "account in this mode (active or not; deleted ones aside) already has exactly this URL; "
    "the message names it.",
}


@blp.route("/endpoints")
class Endpoints(ApiKeyView):
    @blp.arguments(EndpointCreateSchema)
    @blp.response(201, EndpointWithSecretSchema)
    @blp.errors(400, 401)
    @blp.alt_response(409, **URL_TAKEN)
    def post(self, body):
        """Register an endpoint; its signing secret is in this answer only."""
        endpoint, secret = committed_for_caller(
            webhook_endpoints.create_endpoint, body["url"], body["events"]
        )
        return {**endpoint_fields(endpoint), "secret": secret}

    @blp.response(200, EndpointListSchema)
    @blp.errors(401)
    def get(self):
        """The account's endpoints (never their secrets)."""
        endpoints = webhook_endpoints.list_endpoints(g.account_id, g.api_key.mode)
        return {"data": [endpoint_fields(e) for e in endpoints]}


@blp.route("/endpoints/<endpoint_id>")
class EndpointById(ApiKeyView):
    @blp.arguments(EndpointUpdateSchema, required=False)
    @blp.response(200, EndpointUpdatedSchema)
    @blp.errors(400, 401, 404)
    @blp.alt_response(409, **URL_TAKEN)
    def patch(self, changes, endpoint_id):
        """Change url, events or status (only the fields sent: with no body, nothing)."""
        return endpoint_fields(
            committed_for_caller(webhook_endpoints.update_endpoint, endpoint_id, changes)
        )

    @blp.response(200, DeletedSchema)
    @blp.errors(401, 404)
    def delete(self, endpoint_id):
        """Delete an endpoint; deliveries still waiting for it are abandoned (CANCELLED)."""
        committed_for_caller(webhook_endpoints.delete_endpoint, endpoint_id)
        return {"deleted": True}


@blp.route("/endpoints/<endpoint_id>/rotate-secret")
class EndpointSecret(ApiKeyView):
    @blp.arguments(RotateSecretSchema, required=False)
    @blp.response(200, SecretSchema)
    @blp.errors(400, 401, 404)
    def post(self, body, endpoint_id):
        """A new secret, used by every delivery from now on (no overlap window)."""
        if body.get("id", endpoint_id) != endpoint_id:
            raise InvalidRequest("id must be this endpoint's id.", param="id")
        endpoint, secret = committed_for_caller(webhook_endpoints.rotate_secret, endpoint_id)
        return {"id": endpoint.id, "secret": secret}


@blp.route("/endpoints/<endpoint_id>/recover")
class EndpointRecovery(ApiKeyView):
    @blp.arguments(RecoverSchema)
    @blp.response(200, RecoveredSchema)
    @blp.errors(400, 401, 404)
    def post(self, body, endpoint_id):
        """Resend every FAILED (dead-lettered) delivery of the endpoint since a time."""
        return {"recovered": committed_for_caller(relay.recover, endpoint_id, body["since"])}


@blp.route("/event-catalog")
class EventCatalog(MethodView):
    @blp.doc(security=[])
    @blp.response(200, CatalogEntrySchema(many=True))
    def get(self):
        """Every subscribable event name (no authentication); legacy names flagged."""
        return [
            {
                "event": e.event,
                "description": e.description,
                **({"legacy": True} if e.legacy else {}),
            }
            for e in event_catalog.CATALOG
        ]


@blp.route("/deliveries")
class Deliveries(ApiKeyView):
    @blp.arguments(DeliveryQuerySchema, location="query", unknown="raise")
    @blp.response(200, DeliveryPageSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """The delivery log, newest first, with filters."""
        rows, total = delivery_log.list_deliveries(
            g.account_id,
            g.api_key.mode,
            status=query.get("status"),
            event_type=query.get("eventType"),
            endpoint_id=query.get("endpointId"),
            limit=query["limit"],
            offset=query["offset"],
        )
        return {
            "data": [delivery_fields(d) for d in rows],
            "total": total,
            "limit": query["limit"],
            "offset": query["offset"],
        }


@blp.route("/deliveries/<delivery_id>/retry")
class DeliveryRetry(ApiKeyView):
    @blp.response(201, DeliverySchema)
    @blp.errors(401, 404)
    def post(self, delivery_id):
        """Send a past delivery again (a new delivery of the same event, same evt_ id)."""
        return delivery_fields(committed_for_caller(relay.resend, delivery_id))


@blp.route("/stats")
class DeliveryStats(ApiKeyView):
    @blp.response(200, DeliveryStatsSchema)
    @blp.errors(401)
    def get(self):
        """How many deliveries are in each status."""
        return delivery_log.stats(g.account_id, g.api_key.mode)
