"""Forms of getting in: signing in, choosing the account to act in, issuing an API key."""

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, HiddenField, PasswordField, StringField
from wtforms.validators import DataRequired, Length, Optional

from app.services.api_keys import MAX_LABEL_LENGTH


class LoginForm(FlaskForm):
    email = EmailField("E-mail", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])


class AccountSwitchForm(FlaskForm):
    account_id = HiddenField(validators=[DataRequired()])


class ApiKeyIssueForm(FlaskForm):
    label = StringField("Label", validators=[Optional(), Length(max=MAX_LABEL_LENGTH)])
    test = BooleanField("Test mode (sandbox) key", default=True)
