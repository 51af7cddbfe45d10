"""Wallet balances as merchants read them: per currency, with the next release.

Reads only: balances change through `services.ledger.post`. The primary currency (BRL)
always has a wallet in the answers, with zeros until money arrives, so a new merchant sees
R$ 0,00 rather than nothing.
"""

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from app.extensions import db
from app.models import KeyMode, Wallet, WalletType
from app.services import releases

PRIMARY_CURRENCY = "BRL"


@dataclass(frozen=True)
class Balance:
    currency: str
    wallet_type: str
    available: int
    pending: int
    retained: int
    next_release_at: datetime | None
    next_release_amount: int | None

    @property
    def total(self) -> int:
        return self.available + self.pending


def balances(account_id: str, mode: KeyMode) -> list[Balance]:
    """One balance per wallet of the account in this mode, the primary currency first."""
    wallets = db.session.scalars(
        sa.select(Wallet)
        .where(Wallet.account_id == account_id, Wallet.mode == mode)
        .order_by(Wallet.currency)
    ).all()
    found = [_balance(wallet.currency, wallet) for wallet in wallets]
    if not any(b.currency == PRIMARY_CURRENCY for b in found):
        found.append(_balance(PRIMARY_CURRENCY, None))
    return sorted(found, key=lambda b: (b.currency != PRIMARY_CURRENCY, b.currency))


def balance(account_id: str, mode: KeyMode, currency: str) -> Balance:
    """The balance in one currency; a currency the account never received is all zeros."""
    wallet = db.session.scalar(
        sa.select(Wallet).where(
            Wallet.account_id == account_id,
            Wallet.mode == mode,
            Wallet.currency == currency,
            Wallet.wallet_type == WalletType.OPERATIONAL,
        )
    )
    return _balance(currency, wallet)


def _balance(currency: str, wallet: Wallet | None) -> Balance:
    at, amount = releases.next_release(wallet.id if wallet else None)
    return Balance(
        currency=currency,
        wallet_type=str(wallet.wallet_type if wallet else WalletType.OPERATIONAL),
        available=wallet.available if wallet else 0,
        pending=wallet.pending if wallet else 0,
        retained=wallet.retained if wallet else 0,
        next_release_at=at,
        next_release_amount=amount,
    )
