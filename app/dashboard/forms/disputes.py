"""Forms of disputes: the merchant's appeal and accept on a case's page, and the staff desk's
decision, amount confirmation and recording of a case the channel reported."""

import re

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    DateTimeLocalField,
    SelectChoice,
    SelectField,
    StringField,
    TextAreaField,
)
from wtforms.validators import DataRequired, Length, Optional, Regexp

from app.dashboard.forms.fields import TOO_LONG, AmountField, OptionalAmountField
from app.formats.labels import DISPUTE_TYPE_LABELS, MED_METHOD_LABELS
from app.models import DisputeType
from app.services.disputes.cases import (
    DECISIONS,
    EXTERNAL_ID,
    MAX_APPEAL,
    MAX_REASON,
    MED_METHODS,
    MIN_APPEAL,
)

MAX_DECISION_NOTE = 500  # the dispute case's decision_note column
# WTForms' own message for a too-long field, through this app's catalogs.
DECISION_LABELS = {
    "rejected": _l("Rejected: lost, the held amount goes to the payer"),
    "refunded_to_merchant": _l("Closed in the merchant's favour: the held amount is returned"),
    "closed_without_refund": _l("Closed without refund: the held amount is not returned"),
}


class AppealForm(FlaskForm):
    """The merchant contests an open dispute; the service checks the length again, trimmed."""

    reason = TextAreaField(
        _l("Why you contest this dispute"),
        validators=[
            DataRequired(_l("Explain why you contest the dispute.")),
            Length(
                min=MIN_APPEAL,
                max=MAX_APPEAL,
                message=_l("Write %(min)d to %(max)d characters."),
            ),
        ],
    )


class AcceptDisputeForm(FlaskForm):
    """Accepting is final and loses the amount, so it takes a ticked box, not just a click."""

    understood = BooleanField(
        _l("I understand that accepting is final and the disputed amount is lost"),
        validators=[DataRequired(_l("Tick the box to confirm that you accept the loss."))],
    )


class DisputeDecisionForm(FlaskForm):
    """Staff apply the dispute channel's decision to an open or appealed case."""

    decision = SelectField(
        _l("Decision"),
        choices=[SelectChoice(decision, DECISION_LABELS[decision]) for decision in DECISIONS],
    )
    note = StringField(
        _l("Note (optional)"),
        validators=[Optional(), Length(max=MAX_DECISION_NOTE, message=TOO_LONG)],
    )


class ConfirmDisputeAmountForm(FlaskForm):
    """Staff confirm the disputed amount of a case whose reported amount differed from the
    charge's: it is held now, and the case can then be decided like any other."""

    amount = AmountField(_l("Amount to hold"))


class BackOfficeDisputeForm(FlaskForm):
    """Staff record a dispute the channel reported on a paid charge. The notification's id is
    required, so sending the form again finds the case it opened instead of a second one."""

    charge_id = StringField(
        _l("Charge id"),
        validators=[
            DataRequired(_l("Enter the charge id (ch_…).")),
            Length(max=64, message=TOO_LONG),
        ],
    )
    external_id = StringField(
        _l("Notification id"),
        validators=[
            DataRequired(_l("Enter the id the dispute channel gave this notification.")),
            Regexp(
                EXTERNAL_ID,
                matcher=re.fullmatch,
                message=_l("Use 1 to 64 letters, digits, '_' or '-'."),
            ),
        ],
    )
    type = SelectField(
        _l("Type"),
        choices=[SelectChoice(kind.value, DISPUTE_TYPE_LABELS[kind]) for kind in DisputeType],
        default=DisputeType.MED.value,
    )
    amount = OptionalAmountField(_l("Disputed amount"))
    method = SelectField(
        _l("MED method"),
        choices=[SelectChoice("", _l("Not reported"))]
        + [SelectChoice(method, MED_METHOD_LABELS[method]) for method in MED_METHODS],
    )
    reason = TextAreaField(
        _l("Reason"),
        validators=[Optional(), Length(max=MAX_REASON, message=TOO_LONG)],
    )
    response_deadline = DateTimeLocalField(
        _l("Response deadline"), format="%Y-%m-%dT%H:%M", validators=[Optional()]
    )
