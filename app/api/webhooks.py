"""Webhooks (apikey): endpoints, the event catalog (public), the delivery log and resends.

Endpoints and deliveries belong to the key's mode: a test key manages test endpoints, which
receive test-mode events only.
"""

from flask import g
from flask.views import MethodView

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
from app.api.security import API_KEY_SECURITY, require_api_key
from app.errors import InvalidRequest
from app.extensions import Blueprint, db
from app.formats.webhooks import delivery_fields, endpoint_fields
from app.services import event_catalog, webhooks

blp = Blueprint("webhooks", __name__, url_prefix="/v1/webhooks", description="Webhooks (apikey)")


@blp.route("/endpoints")
class Endpoints(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.arguments(EndpointCreateSchema)
    @blp.response(201, EndpointWithSecretSchema)
    @blp.errors(400, 401)
    def post(self, body):
        """Register an endpoint; its signing secret is in this answer only."""
        endpoint, secret = webhooks.create_endpoint(
            g.account_id, g.api_key.mode, body["url"], body["events"]
        )
        db.session.commit()
        return {**endpoint_fields(endpoint), "secret": secret}

    @blp.doc(security=API_KEY_SECURITY)
    @blp.response(200, EndpointListSchema)
    @blp.errors(401)
    def get(self):
        """The account's endpoints (never their secrets)."""
        endpoints = webhooks.list_endpoints(g.account_id, g.api_key.mode)
        return {"data": [endpoint_fields(e) for e in endpoints]}


@blp.route("/endpoints/<endpoint_id>")
class EndpointById(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.arguments(EndpointUpdateSchema, required=False)
    @blp.response(200, EndpointUpdatedSchema)
    @blp.errors(400, 401, 404)
    def patch(self, changes, endpoint_id):
        """Change url, events or status (only the fields sent: with no body, nothing)."""
        endpoint = webhooks.update_endpoint(g.account_id, g.api_key.mode, endpoint_id, changes)
        db.session.commit()
        return endpoint_fields(endpoint)

    @blp.doc(security=API_KEY_SECURITY)
    @blp.response(200, DeletedSchema)
    @blp.errors(401, 404)
    def delete(self, endpoint_id):
        """Delete an endpoint; deliveries still waiting for it are abandoned (CANCELLED)."""
        webhooks.delete_endpoint(g.account_id, g.api_key.mode, endpoint_id)
        db.session.commit()
        return {"deleted": True}


@blp.route("/endpoints/<endpoint_id>/rotate-secret")
class EndpointSecret(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.arguments(RotateSecretSchema, required=False)
    @blp.response(200, SecretSchema)
    @blp.errors(400, 401, 404)
    def post(self, body, endpoint_id):
        """A new secret, used by every delivery from now on (no overlap window)."""
        if body.get("id", endpoint_id) != endpoint_id:
            raise InvalidRequest("id must be this endpoint's id.", param="id")
        endpoint, secret = webhooks.rotate_secret(g.account_id, g.api_key.mode, endpoint_id)
        db.session.commit()
        return {"id": endpoint.id, "secret": secret}


@blp.route("/endpoints/<endpoint_id>/recover")
class EndpointRecovery(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.arguments(RecoverSchema)
    @blp.response(200, RecoveredSchema)
    @blp.errors(400, 401, 404)
    def post(self, body, endpoint_id):
        """Resend every FAILED (dead-lettered) delivery of the endpoint since a time."""
        count = webhooks.recover(g.account_id, g.api_key.mode, endpoint_id, body["since"])
        db.session.commit()
        return {"recovered": count}


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
class Deliveries(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.arguments(DeliveryQuerySchema, location="query", unknown="raise")
    @blp.response(200, DeliveryPageSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """The delivery log, newest first, with filters."""
        rows, total = webhooks.list_deliveries(
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
class DeliveryRetry(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.response(201, DeliverySchema)
    @blp.errors(401, 404)
    def post(self, delivery_id):
        """Send a past delivery again (a new delivery of the same event, same evt_ id)."""
        delivery = webhooks.resend(g.account_id, g.api_key.mode, delivery_id)
        db.session.commit()
        return delivery_fields(delivery)


@blp.route("/stats")
class DeliveryStats(MethodView):
    decorators = [require_api_key]

    @blp.doc(security=API_KEY_SECURITY)
    @blp.response(200, DeliveryStatsSchema)
    @blp.errors(401)
    def get(self):
        """How many deliveries are in each status."""
        return webhooks.stats(g.account_id, g.api_key.mode)
