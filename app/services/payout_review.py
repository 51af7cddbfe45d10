"""The back-office approval queue for payouts: what is PENDING, and whose it is.

Staff decide each one through `payouts.approve` and `payouts.reject`, the functions behind
`/v1/admin/withdrawals`; this module only finds what is waiting. It reads across every
merchant account on purpose (platform staff only), so no merchant-facing route may call it.
"""

from dataclasses import dataclass

import sqlalchemy as sa

from app.extensions import db
from app.models import Account, Payout
from app.services import payouts

DEFAULT_QUEUE_LIMIT = 100


@dataclass(frozen=True)
class PendingPayout:
    """A row of the back-office queue: the payout and the merchant who asked for it."""

    payout: Payout
    account_name: str


def pending_payouts_with_accounts(limit: int = DEFAULT_QUEUE_LIMIT) -> list[PendingPayout]:
    """PENDING payouts of every account, oldest first, with account names in one query."""
    waiting = payouts.pending_review(limit)
    names = dict(
        db.session.execute(
            sa.select(Account.id, Account.name).where(
                Account.id.in_({payout.account_id for payout in waiting})
            )
        ).all()
    )
    return [PendingPayout(payout, names[payout.account_id]) for payout in waiting]
