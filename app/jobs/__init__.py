"""RQ jobs: plain functions that call services, safe to run twice, run with an app context."""

import logging
from collections.abc import Callable, Iterable
from typing import TypeVar

from app.extensions import db

BATCH_SIZE = 100
Item = TypeVar("Item")


def in_batches(step: Callable[[int], int], batch_size: int = BATCH_SIZE) -> int:
    """Run `step(batch_size)` and commit, again while it fills a whole batch; so a long
    backlog is worked through in short transactions. Returns the total handled."""
    total = 0
    while True:
        done = step(batch_size)
        db.session.commit()
        total += done
        if done < batch_size:
            return total


def sweep(
    due: Iterable[Item],
    act: Callable[[Item], object],
    *,
    log: logging.Logger,
    failure: str,
    details: Callable[[Item], dict] = lambda item: {"id": item},
) -> None:
    """Run `act(item)` and commit, for each due item in a transaction of its own: a failure
    is rolled back and logged as `failure` with `details(item)` (the next sweep tries it
    again), so one bad item never holds up the rest."""
    for item in due:
        try:
            act(item)
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception(failure, extra=details(item))
