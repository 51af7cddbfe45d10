"""Charge expiry, run by `rq cron` every CHARGE_EXPIRY_SWEEP_SECONDS (reads expire too).

Safe to run twice or concurrently: each charge is locked and re-checked before it moves.
"""

from app.extensions import db
from app.services import charges

BATCH_SIZE = 100


def expire_charges() -> int:
    """Expire every unpaid charge past its `pix.expires_at`, committing batch by batch."""
    expired = 0
    while True:
        done = charges.expire_due_charges(batch_size=BATCH_SIZE)
        db.session.commit()
        expired += done
        if done < BATCH_SIZE:
            return expired
