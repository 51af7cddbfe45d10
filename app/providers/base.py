"""The provider interface: what the service asks of a Pix provider (sandbox or live PSP).

Services talk only to this interface, so a live adapter (the Banco Central's API Pix) slots
in beside the sandbox without touching the charge rules. A provider raises `ProviderError`
when it cannot do what was asked; the caller decides what that means for the record.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime


class ProviderError(Exception):
    """The provider refused or failed; `code` is its own status or error code. Whether the
    operation happened is unknown (a timeout, an outage): retry with the same reference."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.message = message
        self.code = code


class PayoutRejected(ProviderError):
    """The acquirer definitively refused the payout: no money left, it is safe to refund."""


@dataclass(frozen=True)
class PixChargeRequest:
    reference: str
    amount: int
    expires_in: int
    merchant_name: str
    merchant_city: str
    payer_name: str | None = None
    payer_document: str | None = None


@dataclass(frozen=True)
class PixCharge:
    txid: str
    br_code: str
    location_id: str | None
    expires_at: datetime


@dataclass(frozen=True)
class PixReturn:
    """A Pix return (devolução) sent back by the original end-to-end id."""

    return_id: str
    status: str


@dataclass(frozen=True)
class PayoutRequest:
    """Money out: `destination` holds the Pix key, bank account or crypto address fields."""

    reference: str
    payout_type: str
    amount: int
    currency: str
    destination: dict
    requested_at: datetime


@dataclass(frozen=True)
class PayoutSent:
    """The provider's reference for a payout it settled (a Pix end-to-end id, a TED or a
    transaction hash)."""

    reference: str


class PixProvider(ABC):
    name: str

    @abstractmethod
    def create_charge(self, request: PixChargeRequest) -> PixCharge:
        """Bind a txid and produce the BR Code of an immediate charge."""

    @abstractmethod
    def charge_status(self, txid: str) -> str:
        """The provider's status of the charge (API Pix vocabulary: ATIVA, CONCLUIDA, …)."""

    @abstractmethod
    def return_pix(self, end_to_end_id: str, amount: int, refund_id: str) -> PixReturn:
        """Send `amount` back to the payer of `end_to_end_id`; `refund_id` makes it idempotent."""

    @abstractmethod
    def payout(self, request: PayoutRequest) -> PayoutSent:
        """Pay money out; the same `request.reference` always gets the same answer, so a
        retry never pays twice. Raises PayoutRejected when the acquirer refuses it for good,
        ProviderError when the outcome is unknown."""
