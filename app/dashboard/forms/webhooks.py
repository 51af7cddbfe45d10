"""Forms of the webhooks page: adding and editing an endpoint, its enable/disable button, and
recovering its failed deliveries."""

from flask_babel import lazy_gettext as _l
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

from app.dashboard.forms.fields import NOT_ONE_OF
from app.formats import event_catalog
from app.formats.labels import ENDPOINT_STATUS_LABELS
from app.models import EndpointStatus

# The catalog as the dashboard groups it (aliases are legacy names too).
EVENT_GROUPS = (
    (_l("Canonical"), event_catalog.CANONICAL),
    (_l("Disputes"), event_catalog.DISPUTES),
    (_l("Legacy"), event_catalog.LEGACY + event_catalog.ALIAS_ENTRIES),
)
ENDPOINT_STATUSES = tuple(status.value for status in EndpointStatus)
# The catalog's descriptions in the reader's language (the API answers with the English).
EVENT_DESCRIPTIONS = {entry.event: _l(entry.description) for entry in event_catalog.CATALOG} | {
    alias: _l("Alias for %(events)s.", events=", ".join(names))
    for alias, names in event_catalog.ALIASES.items()
}


class WebhookEndpointForm(FlaskForm):
    """Add a webhook endpoint. The url and event rules are the service's (`check_url`, the
    catalog), so the form does not repeat them: a refusal is shown beside the field the
    service names."""

    url = URLField(_l("Endpoint URL"))
    events = SelectMultipleField(
        _l("Events"),
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
        _l("Status"),
        choices=[
            SelectChoice(status.value, label) for status, label in ENDPOINT_STATUS_LABELS.items()
        ],
    )


class WebhookStatusForm(FlaskForm):
    """The enable/disable button: the status to switch the endpoint to."""

    status = HiddenField(
        _l("Status"),
        validators=[AnyOf(ENDPOINT_STATUSES, message=NOT_ONE_OF)],
    )


class WebhookRecoverForm(FlaskForm):
    """Resend an endpoint's failed deliveries since a time typed in São Paulo time."""

    since = DateTimeLocalField(
        _l("Failed since"),
        format="%Y-%m-%dT%H:%M",
        invalid_value_message=_l("Not a valid datetime value."),
        validators=[DataRequired(_l("Enter the date and time to recover from."))],
    )
