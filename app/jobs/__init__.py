"""RQ jobs: plain functions that call services, safe to run twice, run with an app context."""

from collections.abc import Callable

from app.extensions import db

BATCH_SIZE = 100


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
