"""Rows as the services leave them, written straight to the database so a test can place
payments, balances, release tranches and payouts at chosen times (the overview's figures)."""

import uuid
from datetime import UTC, date, datetime, timedelta

from app.business_days import SAO_PAULO
from app.extensions import db
from app.models import (
    KeyMode,
    LedgerAccount,
    Origin,
    Payout,
    PayoutStatus,
    PayoutType,
    SettlementRelease,
    Transaction,
    TransactionStatus,
)
from app.services import ledger
from app.services.ledger import Line


def sao_paulo(day: date, hour: int = 0, minute: int = 0) -> datetime:
    """That wall-clock time in São Paulo, in UTC."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=SAO_PAULO).astimezone(UTC)


def payment(
    app,
    account_id: str,
    created_at: datetime,
    amount: int,
    status: TransactionStatus = TransactionStatus.PAID,
    *,
    mode: KeyMode = KeyMode.TEST,
    currency: str = "BRL",
) -> None:
    """A Pix payment; a paid one was paid a minute after its creation."""
    paid = status is TransactionStatus.PAID
    with app.app_context():
        db.session.add(
            Transaction(
                account_id=account_id,
                mode=mode,
                origin=Origin.PAYMENTS,
                status=status,
                amount=amount,
                currency=currency,
                payment_methods=["PIX"],
                paid_with="PIX" if paid else None,
                created_at=created_at,
                finalised_at=created_at,
                paid_at=created_at + timedelta(minutes=1) if paid else None,
            )
        )
        db.session.commit()


def credit(
    app,
    account_id: str,
    amount: int,
    mode: KeyMode = KeyMode.TEST,
    balance: LedgerAccount = LedgerAccount.AVAILABLE,
    *,
    currency: str = "BRL",
) -> None:
    """Money booked to a wallet balance, as the settlement and release postings do."""
    with app.app_context():
        ledger.post(
            account_id=account_id,
            mode=mode,
            currency=currency,
            kind="charge_settlement",
            reference_id=uuid.uuid4().hex,
            description=f"Credit of {amount}",
            lines=[Line(balance, amount), Line(LedgerAccount.PROVIDER_CLEARING, -amount)],
        )
        db.session.commit()


def pending_release(
    app,
    account_id: str,
    amount: int,
    release_at: datetime,
    mode: KeyMode = KeyMode.TEST,
    *,
    currency: str = "BRL",
    released_at: datetime | None = None,
) -> None:
    """Pending money of a wallet with its scheduled release (done at `released_at`, if given)."""
    credit(app, account_id, amount, mode, LedgerAccount.PENDING, currency=currency)
    with app.app_context():
        db.session.add(
            SettlementRelease(
                wallet_id=ledger.locked_wallet(account_id, mode, currency).id,
                reference_id=uuid.uuid4().hex,
                amount=amount,
                release_at=release_at,
                released_at=released_at,
            )
        )
        db.session.commit()


def payout(
    app,
    account_id: str,
    amount: int,
    mode: KeyMode = KeyMode.TEST,
    status: PayoutStatus = PayoutStatus.PENDING,
    *,
    currency: str = "BRL",
) -> None:
    """A Pix payout request, fee-free."""
    with app.app_context():
        db.session.add(
            Payout(
                account_id=account_id,
                mode=mode,
                status=status,
                type=PayoutType.PIX,
                amount=amount,
                fee=0,
                currency=currency,
                pix_key="ana@example.com",
                pix_key_type="EMAIL",
            )
        )
        db.session.commit()
