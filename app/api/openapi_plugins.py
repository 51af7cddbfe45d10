"""Additions to the OpenAPI document that follow from how a route authenticates, made once
here so no route can forget them."""

from apispec import BasePlugin

from app.api.security import API_KEY_SECURITY
from app.errors import ErrorSchema
from app.services.api_rate_limits import LIMIT_HEADER, REMAINING_HEADER

RATE_LIMITED_RESPONSE = "RATE_LIMITED"
ALLOWANCE_HEADERS = {
    LIMIT_HEADER: {
        "description": "Requests allowed per minute by the tightest limit (the API key's or "
        "its account's); absent while the counters cannot be reached.",
        "schema": {"type": "integer", "minimum": 1},
    },
    REMAINING_HEADER: {
        "description": "Requests left in the current one-minute window under that limit.",
        "schema": {"type": "integer", "minimum": 0},
    },
}
RATE_LIMITED = {
    "description": (
        "rate_limit_error/rate_limited: more requests this minute than the API key's or its "
        "account's limit allows; retry after Retry-After seconds."
    ),
    "content": {"application/json": {"schema": ErrorSchema}},
    "headers": {
        "Retry-After": {
            "description": "Seconds until the current one-minute window ends.",
            "required": True,
            "schema": {"type": "integer", "minimum": 0},
        },
        LIMIT_HEADER: {
            "description": "Requests allowed per minute by the limit that was reached.",
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
        },
        REMAINING_HEADER: {
            "description": "Requests left in the current window: 0.",
            "required": True,
            "schema": {"type": "integer", "minimum": 0},
        },
    },
}


class ApiKeyRateLimitPlugin(BasePlugin):
    """Every operation authenticated by API key documents its 429 and, on its successful
    answers, the allowance headers: `require_api_key` counts each request against the key's
    and the account's per-minute limits."""

    def init_spec(self, spec) -> None:
        self.spec = spec

    def operation_helper(self, path=None, operations=None, **kwargs) -> None:
        for operation in (operations or {}).values():
            if operation.get("security") == API_KEY_SECURITY:
                self._register_response()
                responses = operation.setdefault("responses", {})
                for status, response in responses.items():
                    if str(status).startswith("2") and isinstance(response, dict):
                        response.setdefault("headers", {}).update(ALLOWANCE_HEADERS)
                responses["429"] = RATE_LIMITED_RESPONSE

    def _register_response(self) -> None:
        if RATE_LIMITED_RESPONSE not in self.spec.components.responses:
            self.spec.components.response(RATE_LIMITED_RESPONSE, RATE_LIMITED)
