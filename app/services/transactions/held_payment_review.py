"""The manual review queue: Pix payments held because a payer-locked charge was paid by a bank
that did not report the payer's document.

Staff decide each one from the back-office through `pix_payments.release_held` and
`return_held`; this module only finds what is waiting. It reads across every merchant
account on purpose (platform staff only), so no merchant-facing route may call it.
"""

from dataclasses import dataclass

import sqlalchemy as sa

from app.extensions import db
from app.models import Account, ReceivedPix, ReceivedPixOutcome, Transaction, TransactionStatus
from app.services.transactions import pix_payments

DEFAULT_QUEUE_LIMIT = 100


@dataclass(frozen=True)
class HeldCharge:
    """A row of the back-office queue: the charge, whose it is, and the Pix it holds."""

    charge: Transaction
    account_name: str
    held: ReceivedPix


def charges_in_review(limit: int = DEFAULT_QUEUE_LIMIT) -> list[Transaction]:
    """Charges holding a Pix for review, newest payment first, in every account and mode.

    Only charges with a held Pix are listed, so every row can be released or returned.
    """
    return list(
        db.session.scalars(
            sa.select(Transaction)
            .join(ReceivedPix, ReceivedPix.transaction_id == Transaction.id)
            .where(
                Transaction.status == TransactionStatus.PROCESSING,
                ReceivedPix.outcome == ReceivedPixOutcome.HELD_FOR_REVIEW,
            )
            .order_by(ReceivedPix.received_at.desc(), Transaction.id.desc())
            .limit(limit)
        )
    )


def review_queue(limit: int = DEFAULT_QUEUE_LIMIT) -> list[HeldCharge]:
    """What the back-office table needs per held charge: the merchant and the payer seen."""
    held_charges = charges_in_review(limit)
    names = dict(
        db.session.execute(
            sa.select(Account.id, Account.name).where(
                Account.id.in_({charge.account_id for charge in held_charges})
            )
        ).all()
    )
    return [
        HeldCharge(charge, names[charge.account_id], pix_payments.held_payment(charge))
        for charge in held_charges
    ]
