"""Forms of payouts: the merchant's Pix payout request, and staff refusing a payout in the
back-office."""

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import HiddenField, SelectChoice, SelectField, StringField
from wtforms.validators import AnyOf, DataRequired, Length, Optional

from app.dashboard.forms.fields import (
    LENGTH_BETWEEN,
    MAX_PIX_KEY_LENGTH,
    NOT_ONE_OF,
    REQUIRED,
    TOO_LONG,
    ReaisField,
)
from app.pix.keys import PixKeyType
from app.services.idempotency import MAX_KEY_LENGTH, MIN_KEY_LENGTH
from app.services.payouts.requesting import MAX_DESCRIPTION

MAX_REJECTION_REASON = 500  # the payout's failure_reason column
PIX_KEY_TYPE_LABELS = {
    PixKeyType.CPF: "CPF",
    PixKeyType.CNPJ: "CNPJ",
    PixKeyType.EMAIL: _l("E-mail"),
    PixKeyType.PHONE: _l("Phone (+55…)"),
    PixKeyType.EVP: _l("Random key (EVP)"),
}


class PixPayoutForm(FlaskForm):
    """A Pix payout from the dashboard; the payout rules (who may, the key, the balance, the
    caps) are the service's, so the form only checks what it must to build the request.

    `mode` is the mode of the page the form was shown on; `idempotency_key` is generated when
    the form is rendered, so a second click finds the first payout instead of making another.
    """

    amount = ReaisField(_l("Amount (R$)"))
    pix_key = StringField(
        _l("Pix key"),
        validators=[
            DataRequired(_l("Enter the Pix key to pay.")),
            Length(max=MAX_PIX_KEY_LENGTH, message=TOO_LONG),
        ],
    )
    pix_key_type = SelectField(
        _l("Key type"),
        choices=[SelectChoice("", _l("Choose the key type"))]
        + [SelectChoice(key_type.value, label) for key_type, label in PIX_KEY_TYPE_LABELS.items()],
        validators=[DataRequired(_l("Choose the key type."))],
    )
    description = StringField(
        _l("Description"), validators=[Optional(), Length(max=MAX_DESCRIPTION, message=TOO_LONG)]
    )
    mode = HiddenField(
        _l("Mode"),
        validators=[AnyOf(("test", "live"), message=NOT_ONE_OF)],
    )
    idempotency_key = HiddenField(
        _l("Idempotency key"),
        validators=[
            DataRequired(REQUIRED),
            Length(
                min=MIN_KEY_LENGTH,
                max=MAX_KEY_LENGTH,
                message=LENGTH_BETWEEN,
            ),
        ],
    )


class PayoutRejectionForm(FlaskForm):
    """Staff refusing a payout; the reason is kept on the payout and shown to the merchant."""

    reason = StringField(
        _l("Reason (optional)"),
        validators=[Optional(), Length(max=MAX_REJECTION_REASON, message=TOO_LONG)],
    )
