"""What an API-key view does on its caller's behalf: services called in the key's account and
mode, and the sandbox, which acts in test mode only."""

from collections.abc import Callable
from typing import TypeVar

from flask import g

from app import queueing
from app.errors import NotFound
from app.extensions import existing_session
from app.models import KeyMode

Answer = TypeVar("Answer")


def committed_for_caller(service: Callable[..., Answer], /, *args, **kwargs) -> Answer:
    """`service(account_id, mode, …)` for the API key's account and mode, with its work
    committed before the view answers (a read may change rows too, e.g. expire a charge)."""
    answer = service(g.account_id, g.api_key.mode, *args, **kwargs)
    session = existing_session()  # a read straight on the pool makes none
    if session is not None:
        queueing.commit(session)
    return answer


def sandbox_mode(refusal: str) -> KeyMode:
    """Test mode, the only one the sandbox acts in: a live key gets a 404 saying `refusal`, as
    if what it asked for did not exist."""
    if g.api_key.mode is not KeyMode.TEST:
        raise NotFound(refusal)
    return KeyMode.TEST
