"""Settlement release, run by `rq cron` every SETTLEMENT_RELEASE_SWEEP_SECONDS."""

from app.extensions import db
from app.services import releases

BATCH_SIZE = 100


def release_settlements() -> int:
    """Move every due tranche from pending to available, committing batch by batch."""
    released = 0
    while True:
        done = releases.release_due(batch_size=BATCH_SIZE)
        db.session.commit()
        released += done
        if done < BATCH_SIZE:
            return released
