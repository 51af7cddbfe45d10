"""Dashboard forms (Flask-WTF: every form carries a CSRF token), one module per domain they
serve: `access`, `payments`, `payouts`, `webhooks`, `disputes`, and `fields` for the fields
several of them share. Here: the button form and the check every button's view makes."""

from typing import TypeVar

from flask_wtf import FlaskForm

from app.errors import InvalidRequest

F = TypeVar("F", bound=FlaskForm)


class ConfirmForm(FlaskForm):
    """A button that changes something: only the CSRF token travels."""


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
