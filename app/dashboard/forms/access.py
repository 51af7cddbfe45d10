"""Forms of getting in: signing in, choosing the account to act in, issuing an API key."""

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    EmailField,
    HiddenField,
    PasswordField,
    SelectChoice,
    SelectField,
    StringField,
)
from wtforms.validators import DataRequired, Length, Optional

from app.dashboard.forms.fields import REQUIRED, TOO_LONG
from app.i18n import LANGUAGE_NAMES
from app.services.api_keys import MAX_LABEL_LENGTH


class LoginForm(FlaskForm):
    email = EmailField(
        _l("E-mail"),
        validators=[
            DataRequired(message=REQUIRED),
            Length(max=254, message=TOO_LONG),
        ],
    )
    password = PasswordField(
        _l("Password"),
        validators=[
            DataRequired(message=REQUIRED),
            Length(max=1024, message=TOO_LONG),
        ],
    )


class LanguageForm(FlaskForm):
    """The top bar's language menu; `next` is the page to return to."""

    locale = SelectField(
        _l("Language"),
        choices=[SelectChoice(locale, name) for locale, name in LANGUAGE_NAMES.items()],
    )
    next = HiddenField()


class AccountSwitchForm(FlaskForm):
    account_id = HiddenField(validators=[DataRequired()])


class ApiKeyIssueForm(FlaskForm):
    label = StringField(
        _l("Label"),
        validators=[
            Optional(),
            Length(
                max=MAX_LABEL_LENGTH,
                message=TOO_LONG,
            ),
        ],
    )
    test = BooleanField(_l("Test mode (sandbox) key"), default=True)
