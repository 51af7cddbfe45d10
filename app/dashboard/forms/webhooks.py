"""Forms of the webhooks page: adding and editing an endpoint, its enable/disable button, and
recovering its failed deliveries."""

from flask_wtf import FlaskForm
from wtforms import (
    DateTimeLocalField,
    HiddenField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    URLField,
)
from wtforms.validators import AnyOf, DataRequired

from app.formats import event_catalog
from app.models import EndpointStatus

# The catalog as the dashboard groups it (aliases are legacy names too).
EVENT_GROUPS = (
    ("Canonical", event_catalog.CANONICAL),
    ("Disputes", event_catalog.DISPUTES),
    ("Legacy", event_catalog.LEGACY + event_catalog.ALIAS_ENTRIES),
)
ENDPOINT_STATUSES = tuple(status.value for status in EndpointStatus)


class WebhookEndpointForm(FlaskForm):
    """Add a webhook endpoint. The url and event rules are the service's (`check_url`, the
    catalog), so the form does not repeat them: a refusal is shown beside the field the
    service names."""

    url = URLField("Endpoint URL")
    events = SelectMultipleField(
        "Events",
        choices=[
            SelectChoice(entry.event, entry.event, optgroup=group)
            for group, entries in EVENT_GROUPS
            for entry in entries
        ],
        validate_choice=False,
    )


class WebhookEndpointEditForm(WebhookEndpointForm):
    """Edit an endpoint: what adding asks, plus its status."""

    status = SelectField(
        "Status", choices=[SelectChoice(status, status) for status in ENDPOINT_STATUSES]
    )


class WebhookStatusForm(FlaskForm):
    """The enable/disable button: the status to switch the endpoint to."""

    status = HiddenField("Status", validators=[AnyOf(ENDPOINT_STATUSES)])


class WebhookRecoverForm(FlaskForm):
    """Resend an endpoint's failed deliveries since a time typed in São Paulo time."""

    since = DateTimeLocalField(
        "Failed since",
        format="%Y-%m-%dT%H:%M",
        validators=[DataRequired("Enter the date and time to recover from.")],
    )
