"""Failure alerts: an endpoint whose deliveries keep dead-lettering.

Each endpoint counts its dead letters in a row (a delivery that gets through resets the
count); when the count reaches WEBHOOK_FAILING_ENDPOINT_ALERT the account's managers are
e-mailed once, by a job after commit, and the dashboard lists the endpoint as failing.
"""

import sqlalchemy as sa
from flask import current_app

from app.extensions import db
from app.models import KeyMode, WebhookEndpoint
from app.queueing import enqueue_after_commit
from app.services import accounts, mail
from app.services.webhooks.endpoints import list_endpoints

ALERT_JOB = "app.jobs.webhooks.alert_failing_endpoint"


def count_dead_letter(endpoint_id: str) -> None:
    """One more dead letter in a row, counted atomically; at the alert threshold the owners
    are told (after commit)."""
    count = db.session.execute(
        sa.update(WebhookEndpoint)
        .where(WebhookEndpoint.id == endpoint_id)
        .values(consecutive_dead_letters=WebhookEndpoint.consecutive_dead_letters + 1)
        .returning(WebhookEndpoint.consecutive_dead_letters)
    ).scalar_one()
    if count == current_app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]:
        enqueue_after_commit(db.session(), "default", ALERT_JOB, endpoint_id)


def clear_dead_letters(endpoint_ids: set[str]) -> None:
    """Deliveries got through: these endpoints' runs of dead letters are over. Written only
    where there was a run, so deliveries that get through write nothing to their endpoint's
    row."""
    if not endpoint_ids:
        return
    db.session.execute(
        sa.update(WebhookEndpoint)
        .where(
            WebhookEndpoint.id.in_(sorted(endpoint_ids)),
            WebhookEndpoint.consecutive_dead_letters > 0,
        )
        .values(consecutive_dead_letters=0)
    )


def failing_endpoints(account_id: str, mode: KeyMode) -> list[WebhookEndpoint]:
    """Endpoints whose recent deliveries keep dead-lettering (shown on the dashboard)."""
    threshold = current_app.config["WEBHOOK_FAILING_ENDPOINT_ALERT"]
    return [e for e in list_endpoints(account_id, mode) if e.consecutive_dead_letters >= threshold]


def alert_owners(endpoint_id: str) -> None:
    """E-mail the account's OWNERs and ADMINs that an endpoint keeps dead-lettering."""
    endpoint = db.session.get(WebhookEndpoint, endpoint_id)
    mail.send(
        accounts.manager_emails(endpoint.account_id),
        "Acme Pay: a webhook endpoint keeps failing",
        f"Deliveries to {endpoint.url} have failed {endpoint.consecutive_dead_letters} times in "
        "a row after every retry. The endpoint is still ACTIVE. Check it, then resend the "
        "failed deliveries from the dashboard or with POST "
        f"/v1/webhooks/endpoints/{endpoint.id}/recover.",
    )
