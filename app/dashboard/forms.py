"""Dashboard forms (Flask-WTF: every form carries a CSRF token)."""

import re
from decimal import Decimal
from typing import TypeVar

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    DateTimeLocalField,
    EmailField,
    HiddenField,
    IntegerField,
    PasswordField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
    TextAreaField,
    URLField,
)
from wtforms.validators import AnyOf, DataRequired, Length, Optional, Regexp, StopValidation

from app.errors import InvalidRequest
from app.formats import event_catalog
from app.formats.money import DECIMAL_COMMA, format_money
from app.formats.payments import METHOD_LABELS
from app.models import DisputeType, EndpointStatus, RefundStrategy
from app.pix.keys import PixKeyType
from app.services import payouts
from app.services.api_keys import MAX_LABEL_LENGTH
from app.services.disputes.cases import (
    DECISIONS,
    EXTERNAL_ID,
    MAX_APPEAL,
    MAX_REASON,
    MED_METHODS,
    MIN_APPEAL,
)
from app.services.idempotency import MAX_KEY_LENGTH, MIN_KEY_LENGTH
from app.services.transactions.charges import MAX_DESCRIPTION
from app.services.transactions.payments import DEFAULT_CURRENCY, MAX_CUSTOMER_NAME
from app.services.transactions.refunds import MAX_REASON as MAX_REFUND_REASON

REAIS = re.compile(r"([0-9]+)(?:[.,]([0-9]+))?")
MAX_REAIS_LENGTH = 20
MAX_PIX_KEY_LENGTH = 77  # as on the API: the longest key, an e-mail
MAX_REJECTION_REASON = 500  # the payout's failure_reason column
MAX_DECISION_NOTE = 500  # the dispute case's decision_note column
DECISION_LABELS = {
    "rejected": "Rejected: lost, the held amount goes to the payer",
    "refunded_to_merchant": "Closed in the merchant's favour: the held amount is returned",
    "closed_without_refund": "Closed without refund: the held amount is not returned",
}
# The catalog as the dashboard groups it (aliases are legacy names too).
EVENT_GROUPS = (
    ("Canonical", event_catalog.CANONICAL),
    ("Disputes", event_catalog.DISPUTES),
    ("Legacy", event_catalog.LEGACY + event_catalog.ALIAS_ENTRIES),
)
ENDPOINT_STATUSES = tuple(status.value for status in EndpointStatus)
PIX_KEY_TYPE_LABELS = {
    PixKeyType.CPF: "CPF",
    PixKeyType.CNPJ: "CNPJ",
    PixKeyType.EMAIL: "E-mail",
    PixKeyType.PHONE: "Phone (+55…)",
    PixKeyType.EVP: "Random key (EVP)",
}


F = TypeVar("F", bound=FlaskForm)


class LoginForm(FlaskForm):
    email = EmailField("E-mail", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])


class AccountSwitchForm(FlaskForm):
    account_id = HiddenField(validators=[DataRequired()])


class ApiKeyIssueForm(FlaskForm):
    label = StringField("Label", validators=[Optional(), Length(max=MAX_LABEL_LENGTH)])
    test = BooleanField("Test mode (sandbox) key", default=True)


class ConfirmForm(FlaskForm):
    """A button that changes something: only the CSRF token travels."""


def to_minor_units(text: str, unit: str = "reais", fraction: str = "centavos") -> int:
    """An amount as typed in `unit` ("12,34") → integer minor units (1234), never a float."""
    match = REAIS.fullmatch(text.strip()) if len(text) <= MAX_REAIS_LENGTH else None
    if match is None:
        raise ValueError(f"Enter an amount in {unit}, like 12,34.")
    units, decimals = match.groups()
    if decimals is not None and len(decimals) > 2:
        raise ValueError(f"Use at most two decimal places ({fraction}), like 12,34.")
    minor = int(Decimal(f"{units}.{decimals or 0}") * 100)
    if minor <= 0:
        raise ValueError("Enter an amount greater than zero.")
    return minor


class ReaisField(StringField):
    """Typed as reais, held as integer centavos; the text typed is shown back on errors."""

    UNIT, FRACTION = "reais", "centavos"
    OPTIONAL = False  # True: left empty means "not given" (None), not an error

    def process_formdata(self, valuelist: list[str]) -> None:
        self.data = None
        if valuelist and (valuelist[0].strip() or not self.OPTIONAL):
            self.data = to_minor_units(valuelist[0], self.UNIT, self.FRACTION)

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data is None and not self.process_errors and not self.OPTIONAL:
            raise StopValidation(f"Enter an amount in {self.UNIT}, like 12,34.")

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else format_money(self.data, notation=DECIMAL_COMMA)


class AmountField(ReaisField):
    """An amount in the payment's currency (two decimal places, like the money filter)."""

    UNIT, FRACTION = "the payment's currency", "cents"


class OptionalAmountField(AmountField):
    OPTIONAL = True


class TestChargeForm(FlaskForm):
    """A sandbox charge from the dashboard; the rules between fields are the service's.

    `idempotency_key` is generated when the form is rendered, so a second click or a
    resubmitted page finds the first charge instead of creating another. It shares the
    payments page with the test payment form: its ids are prefixed `charge-` so each label
    names one field, while the names it posts stay those of the old charges page.
    """

    amount = ReaisField("Amount (R$)", id="charge-amount")
    description = StringField(
        "Description",
        validators=[Optional(), Length(max=MAX_DESCRIPTION)],
        id="charge-description",
    )
    expires_in = IntegerField(
        "Expires in (seconds)", validators=[Optional()], id="charge-expires_in"
    )
    customer_name = StringField(
        "Customer name", validators=[Optional(), Length(max=140)], id="charge-customer_name"
    )
    customer_document = StringField(
        "Customer CPF or CNPJ",
        validators=[Optional(), Length(max=32)],
        id="charge-customer_document",
    )
    expected_payer_tax_id = StringField(
        "Accept payment only from CPF or CNPJ",
        validators=[Optional(), Length(max=32)],
        id="charge-expected_payer_tax_id",
    )
    idempotency_key = HiddenField(
        validators=[DataRequired(), Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH)],
        id="charge-idempotency_key",
    )


class TestPaymentForm(FlaskForm):
    """A sandbox payment by one or more methods (`POST /v1/payments` rules, the service's).

    The provider finalises it in a job right after it is created; `idempotency_key` is
    generated when the form is rendered, so a second click finds the first payment.
    """

    amount = AmountField("Amount")
    currency = StringField(
        "Currency",
        default=DEFAULT_CURRENCY,
        validators=[DataRequired("Enter a currency code, like BRL."), Length(min=3, max=8)],
    )
    payment_methods = SelectMultipleField(
        "Payment methods",
        choices=[SelectChoice(method, label) for method, label in METHOD_LABELS.items()],
        validators=[DataRequired("Choose at least one payment method.")],
    )
    customer_name = StringField(
        "Customer name", validators=[Optional(), Length(max=MAX_CUSTOMER_NAME)]
    )
    customer_email = EmailField("Customer e-mail", validators=[Optional(), Length(max=254)])
    phone = StringField("Phone for MB WAY", validators=[Optional(), Length(max=32)])
    idempotency_key = HiddenField(
        "Idempotency key",
        validators=[DataRequired(), Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH)],
    )


class RefundForm(FlaskForm):
    """Refund a paid transaction in full (amount left empty) or in part. The Pix options
    (strategy, destination key, who pays the Pix-out fee) are read for Pix payments only;
    every rule between them is the service's, shown beside the field it names."""

    amount = OptionalAmountField("Amount to refund")
    reason = StringField("Reason", validators=[Optional(), Length(max=MAX_REFUND_REASON)])
    strategy = SelectField(
        "Pix refund strategy",
        choices=[
            SelectChoice(RefundStrategy.CASHOUT.value, "Cashout: a new Pix to a key"),
            SelectChoice(RefundStrategy.DEVOLUTION.value, "Devolution: return the Pix received"),
        ],
        default=RefundStrategy.CASHOUT.value,
    )
    destination_key = StringField(
        "Destination Pix key", validators=[Optional(), Length(max=MAX_PIX_KEY_LENGTH)]
    )
    pass_fee_to_tenant = BooleanField("My wallet pays the Pix-out fee")
    idempotency_key = HiddenField(
        "Idempotency key",
        validators=[DataRequired(), Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH)],
    )


class CancelPaymentForm(FlaskForm):
    """The cancel button, with a key so a double click cancels once and answers twice."""

    idempotency_key = HiddenField(
        "Idempotency key",
        validators=[DataRequired(), Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH)],
    )


class CancelRefundForm(CancelPaymentForm):
    """The cancel button of a refund waiting for funds: a double click cancels it once."""


class PixPayoutForm(FlaskForm):
    """A Pix payout from the dashboard; the payout rules (who may, the key, the balance, the
    caps) are the service's, so the form only checks what it must to build the request.

    `mode` is the mode of the page the form was shown on; `idempotency_key` is generated when
    the form is rendered, so a second click finds the first payout instead of making another.
    """

    amount = ReaisField("Amount (R$)")
    pix_key = StringField(
        "Pix key",
        validators=[DataRequired("Enter the Pix key to pay."), Length(max=MAX_PIX_KEY_LENGTH)],
    )
    pix_key_type = SelectField(
        "Key type",
        choices=[SelectChoice("", "Choose the key type")]
        + [SelectChoice(key_type.value, label) for key_type, label in PIX_KEY_TYPE_LABELS.items()],
        validators=[DataRequired("Choose the key type.")],
    )
    description = StringField(
        "Description", validators=[Optional(), Length(max=payouts.MAX_DESCRIPTION)]
    )
    mode = HiddenField("Mode", validators=[AnyOf(("test", "live"))])
    idempotency_key = HiddenField(
        "Idempotency key",
        validators=[DataRequired(), Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH)],
    )


class PayoutRejectionForm(FlaskForm):
    """Staff refusing a payout; the reason is kept on the payout and shown to the merchant."""

    reason = StringField(
        "Reason (optional)", validators=[Optional(), Length(max=MAX_REJECTION_REASON)]
    )


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


class AppealForm(FlaskForm):
    """The merchant contests an open dispute; the service checks the length again, trimmed."""

    reason = TextAreaField(
        "Why you contest this dispute",
        validators=[
            DataRequired("Explain why you contest the dispute."),
            Length(
                min=MIN_APPEAL,
                max=MAX_APPEAL,
                message=f"Write {MIN_APPEAL} to {MAX_APPEAL} characters.",
            ),
        ],
    )


class AcceptDisputeForm(FlaskForm):
    """Accepting is final and loses the amount, so it takes a ticked box, not just a click."""

    understood = BooleanField(
        "I understand that accepting is final and the disputed amount is lost",
        validators=[DataRequired("Tick the box to confirm that you accept the loss.")],
    )


class DisputeDecisionForm(FlaskForm):
    """Staff apply the dispute channel's decision to an open or appealed case."""

    decision = SelectField(
        "Decision",
        choices=[SelectChoice(decision, DECISION_LABELS[decision]) for decision in DECISIONS],
    )
    note = StringField("Note (optional)", validators=[Optional(), Length(max=MAX_DECISION_NOTE)])


class ConfirmDisputeAmountForm(FlaskForm):
    """Staff confirm the disputed amount of a case whose reported amount differed from the
    charge's: it is held now, and the case can then be decided like any other."""

    amount = AmountField("Amount to hold")


class BackOfficeDisputeForm(FlaskForm):
    """Staff record a dispute the channel reported on a paid charge. The notification's id is
    required, so sending the form again finds the case it opened instead of a second one."""

    charge_id = StringField(
        "Charge id", validators=[DataRequired("Enter the charge id (ch_…)."), Length(max=64)]
    )
    external_id = StringField(
        "Notification id",
        validators=[
            DataRequired("Enter the id the dispute channel gave this notification."),
            Regexp(
                EXTERNAL_ID,
                matcher=re.fullmatch,
                message="Use 1 to 64 letters, digits, '_' or '-'.",
            ),
        ],
    )
    type = SelectField(
        "Type",
        choices=[SelectChoice(kind.value, kind.value) for kind in DisputeType],
        default=DisputeType.MED.value,
    )
    amount = OptionalAmountField("Disputed amount")
    method = SelectField(
        "MED method",
        choices=[SelectChoice("", "Not reported")]
        + [SelectChoice(method, method) for method in MED_METHODS],
    )
    reason = TextAreaField("Reason", validators=[Optional(), Length(max=MAX_REASON)])
    response_deadline = DateTimeLocalField(
        "Response deadline", format="%Y-%m-%dT%H:%M", validators=[Optional()]
    )


def submitted(form: F) -> F:
    """The validated form, or 400 naming each problem (a button form that fails is almost
    always an expired CSRF token)."""
    if not form.validate_on_submit():
        problems = [
            f"{form[name].label.text}: {message}"
            for name, messages in form.errors.items()
            for message in messages
        ]
        raise InvalidRequest("Check the form: " + "; ".join(problems or ["it was not sent"]))
    return form
