"""Charge expiry, run by `rq cron` every CHARGE_EXPIRY_SWEEP_SECONDS (reads expire too).

Safe to run twice or concurrently: each charge is locked and re-checked before it moves.
"""

from app.jobs import in_batches
from app.services.transactions import charge_expiry


def expire_charges() -> int:
    """Expire every unpaid charge past its `pix.expires_at`, committing batch by batch."""
    return in_batches(lambda size: charge_expiry.expire_due_charges(batch_size=size))
