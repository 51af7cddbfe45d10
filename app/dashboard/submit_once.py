"""Dashboard forms that create a charge or a payout act once per form, like the API's
idempotency keys: the form carries a hidden key, a double click or a resent form replays the
first answer, and the same key sent with other values is refused.
"""

import uuid
from collections.abc import Callable
from urllib.parse import urlencode

from flask import g, request
from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm

from app.errors import ApiError
from app.services import idempotency
from app.templating import refusal_text

MESSAGES = {
    idempotency.KEY_REUSED: _l(
        "This form was already sent with other values. "
        "Check the list below, then submit the form again."
    ),
    idempotency.REQUEST_IN_PROGRESS: _l(
        "This is still being processed. Reload the page in a moment to see it."
    ),
}


def new_form_key() -> str:
    """The hidden key a freshly rendered form carries."""
    return uuid.uuid4().hex


def submit_once(form: FlaskForm, create: Callable[[], str]) -> str:
    """Run `create` (it returns the new record's id) once for the form's key; a replay
    returns the first id. Service refusals propagate as ApiError, with nothing kept."""
    # Scoped by route, as the API's keys are: a path naming two ids would outgrow the
    # column; the fingerprint still holds the path, so a key is never replayed elsewhere.
    claimed = idempotency.claim(
        g.account_id,
        f"dashboard POST {request.url_rule.rule}",
        form.idempotency_key.data,
        _fingerprint(request.path),
    )
    if claimed.replay is not None:
        return claimed.replay.body

    def work():
        record_id = create()
        return record_id, (303, record_id)

    return idempotency.run_once(claimed, work)


def show_error(form: FlaskForm, error: ApiError, field_for_param: dict[str, str]) -> None:
    """Put the service's message beside the field it names, or above the form. A reused key
    gets a fresh one, so correcting the form and sending it again works."""
    message = str(MESSAGES.get(error.code) or refusal_text(error))
    if error.code == idempotency.KEY_REUSED:
        form.idempotency_key.data = new_form_key()
    field = field_for_param.get(error.param or "")
    if field is not None:
        form[field].errors = [*form[field].errors, message]
    else:
        form.form_errors.append(message)


def _fingerprint(path: str) -> str:
    """What was asked, so the same key sent with other values is refused, not replayed."""
    fields = sorted(
        (name, value) for name, value in request.form.items(multi=True) if name != "csrf_token"
    )
    return idempotency.request_fingerprint("POST", path, urlencode(fields).encode())
