"""One way for a dashboard button to act: commit the service's change and say what happened,
or roll back and show why the service refused (someone decided it first, say), then go back
to the page with a 303 so a reload never repeats the post."""

from collections.abc import Callable
from typing import TypeVar

from flask import flash, redirect
from werkzeug.wrappers import Response

from app.errors import ApiError, NotFound
from app.extensions import db
from app.templating import refusal_text

Result = TypeVar("Result")


def act_then_return(
    act: Callable[[], Result],
    describe: Callable[[Result], str],
    page: str,
    *,
    missing_is_404: bool = False,
) -> Response:
    """Run `act`; flash `describe(result)` or the refusal; redirect to `page`. With
    `missing_is_404`, a resource outside the caller's reach stays a 404 (merchant pages)."""
    try:
        result = act()
    except ApiError as error:
        if missing_is_404 and isinstance(error, NotFound):
            raise
        db.session.rollback()
        flash(refusal_text(error), "error")
    else:
        db.session.commit()
        flash(describe(result), "info")
    return redirect(page, 303)
