"""Settlement release, run by `rq cron` every SETTLEMENT_RELEASE_SWEEP_SECONDS."""

from app.jobs import in_batches
from app.services import releases


def release_settlements() -> int:
    """Move every due tranche from pending to available, committing batch by batch."""
    return in_batches(lambda size: releases.release_due(batch_size=size))
