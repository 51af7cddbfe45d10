"""Forms of the payments pages: the test payment and test Pix charge on the list, and one
payment's cancel, refund and cancel-a-refund buttons."""

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    DateField,
    EmailField,
    HiddenField,
    IntegerField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
)
from wtforms.validators import DataRequired, Length, Optional

from app.dashboard.forms.fields import (
    LENGTH_BETWEEN,
    MAX_PIX_KEY_LENGTH,
    REQUIRED,
    TOO_LONG,
    AmountField,
    OptionalAmountField,
    ReaisField,
)
from app.formats.payments import METHOD_LABELS
from app.models import RefundStrategy
from app.services.idempotency import MAX_KEY_LENGTH, MIN_KEY_LENGTH
from app.services.transactions.charges import MAX_DESCRIPTION
from app.services.transactions.payments import DEFAULT_CURRENCY, MAX_CUSTOMER_NAME
from app.services.transactions.refunds import MAX_REASON as MAX_REFUND_REASON

# WTForms' own messages for these validators, as msgids of the dashboard's catalog.

NO_RULE = SelectChoice("", _l("None"))
# A due date's options, by the API's type names (`app.pix.due`), in words.
FIXED_OR_PERCENT_CHOICES = [
    NO_RULE,
    SelectChoice("fixed", _l("An amount in reais")),
    SelectChoice("percent", _l("A percentage of the amount")),
]
INTEREST_CHOICES = [
    NO_RULE,
    SelectChoice("fixed_day", _l("Reais per day late")),
    SelectChoice("percent_day", _l("Percent per day")),
    SelectChoice("percent_month", _l("Percent per month")),
    SelectChoice("percent_year", _l("Percent per year")),
]
DISCOUNT_CHOICES = [
    NO_RULE,
    SelectChoice("fixed", _l("Reais off until a date")),
    SelectChoice("percent", _l("Percent off until a date")),
    SelectChoice("fixed_day", _l("Reais off per day paid early")),
    SelectChoice("percent_day", _l("Percent off per day paid early")),
]


def _rule_type(label: str, choices: list[SelectChoice], name: str) -> SelectField:
    return SelectField(label, choices=choices, default="", id=f"charge-{name}")


def _rule_value(label: str, name: str) -> StringField:
    """Reais or a percentage, as the type beside it says: read with it (`_due_terms`)."""
    return StringField(
        label, validators=[Optional(), Length(max=20, message=TOO_LONG)], id=f"charge-{name}"
    )


class TestChargeForm(FlaskForm):
    """A sandbox charge from the dashboard; the rules between fields are the service's.

    `idempotency_key` is generated when the form is rendered, so a second click or a
    resubmitted page finds the first charge instead of creating another. It shares the
    payments page with the test payment form: its ids are prefixed `charge-` so each label
    names one field, while the names it posts stay those of the old charges page.
    """

    amount = ReaisField(_l("Amount (R$)"), id="charge-amount")
    description = StringField(
        _l("Description"),
        validators=[Optional(), Length(max=MAX_DESCRIPTION, message=TOO_LONG)],
        id="charge-description",
    )
    expires_in = IntegerField(
        _l("Expires in (seconds)"), validators=[Optional()], id="charge-expires_in"
    )
    customer_name = StringField(
        _l("Customer name"),
        validators=[Optional(), Length(max=140, message=TOO_LONG)],
        id="charge-customer_name",
    )
    customer_document = StringField(
        _l("Customer CPF or CNPJ"),
        validators=[Optional(), Length(max=32, message=TOO_LONG)],
        id="charge-customer_document",
    )
    expected_payer_tax_id = StringField(
        _l("Accept payment only from CPF or CNPJ"),
        validators=[Optional(), Length(max=32, message=TOO_LONG)],
        id="charge-expected_payer_tax_id",
    )
    due_date = DateField(_l("Due date"), validators=[Optional()], id="charge-due_date")
    days_valid_after = IntegerField(
        _l("Days payable after the due date"),
        validators=[Optional()],
        id="charge-days_valid_after",
    )
    fine_type = _rule_type(_l("Late fine"), FIXED_OR_PERCENT_CHOICES, "fine_type")
    fine_value = _rule_value(_l("Fine value"), "fine_value")
    interest_type = _rule_type(_l("Interest"), INTEREST_CHOICES, "interest_type")
    interest_value = _rule_value(_l("Interest value"), "interest_value")
    discount_type = _rule_type(_l("Discount for paying early"), DISCOUNT_CHOICES, "discount_type")
    discount_value = _rule_value(_l("Discount value"), "discount_value")
    discount_until = DateField(
        _l("Discount until"), validators=[Optional()], id="charge-discount_until"
    )
    rebate_type = _rule_type(_l("Rebate"), FIXED_OR_PERCENT_CHOICES, "rebate_type")
    rebate_value = _rule_value(_l("Rebate value"), "rebate_value")
    idempotency_key = HiddenField(
        validators=[
            DataRequired(REQUIRED),
            Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH, message=LENGTH_BETWEEN),
        ],
        id="charge-idempotency_key",
    )


class TestPaymentForm(FlaskForm):
    """A sandbox payment by one or more methods (`POST /v1/payments` rules, the service's).

    The provider finalises it in a job right after it is created; `idempotency_key` is
    generated when the form is rendered, so a second click finds the first payment.
    """

    amount = AmountField(_l("Amount"))
    currency = StringField(
        _l("Currency"),
        default=DEFAULT_CURRENCY,
        validators=[
            DataRequired(_l("Enter a currency code, like BRL.")),
            Length(min=3, max=8, message=LENGTH_BETWEEN),
        ],
    )
    payment_methods = SelectMultipleField(
        _l("Payment methods"),
        choices=[SelectChoice(method, label) for method, label in METHOD_LABELS.items()],
        validators=[DataRequired(_l("Choose at least one payment method."))],
    )
    customer_name = StringField(
        _l("Customer name"),
        validators=[Optional(), Length(max=MAX_CUSTOMER_NAME, message=TOO_LONG)],
    )
    customer_email = EmailField(
        _l("Customer e-mail"), validators=[Optional(), Length(max=254, message=TOO_LONG)]
    )
    phone = StringField(
        _l("Phone for MB WAY"), validators=[Optional(), Length(max=32, message=TOO_LONG)]
    )
    idempotency_key = HiddenField(
        _l("Idempotency key"),
        validators=[
            DataRequired(REQUIRED),
            Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH, message=LENGTH_BETWEEN),
        ],
    )


class RefundForm(FlaskForm):
    """Refund a paid transaction in full (amount left empty) or in part. The Pix options
    (strategy, destination key, who pays the Pix-out fee) are read for Pix payments only;
    every rule between them is the service's, shown beside the field it names."""

    amount = OptionalAmountField(_l("Amount to refund"))
    reason = StringField(
        _l("Reason"), validators=[Optional(), Length(max=MAX_REFUND_REASON, message=TOO_LONG)]
    )
    strategy = SelectField(
        _l("Pix refund strategy"),
        choices=[
            SelectChoice(RefundStrategy.CASHOUT.value, _l("Cashout: a new Pix to a key")),
            SelectChoice(
                RefundStrategy.DEVOLUTION.value, _l("Devolution: return the Pix received")
            ),
        ],
        default=RefundStrategy.CASHOUT.value,
    )
    destination_key = StringField(
        _l("Destination Pix key"),
        validators=[Optional(), Length(max=MAX_PIX_KEY_LENGTH, message=TOO_LONG)],
    )
    pass_fee_to_tenant = BooleanField(_l("My wallet pays the Pix-out fee"))
    idempotency_key = HiddenField(
        _l("Idempotency key"),
        validators=[
            DataRequired(REQUIRED),
            Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH, message=LENGTH_BETWEEN),
        ],
    )


class CancelPaymentForm(FlaskForm):
    """The cancel button, with a key so a double click cancels once and answers twice."""

    idempotency_key = HiddenField(
        _l("Idempotency key"),
        validators=[
            DataRequired(REQUIRED),
            Length(min=MIN_KEY_LENGTH, max=MAX_KEY_LENGTH, message=LENGTH_BETWEEN),
        ],
    )


class CancelRefundForm(CancelPaymentForm):
    """The cancel button of a refund waiting for funds: a double click cancels it once."""
