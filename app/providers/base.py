"""The provider interface: what the service asks of a Pix provider (sandbox or live PSP).

Services talk only to this interface, so a live adapter (the Banco Central's API Pix) slots
in beside the sandbox without touching the charge rules. A provider raises `ProviderError`
when it cannot do what was asked; the caller decides what that means for the record.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

from app.pix.due import DueTerms


class ProviderError(Exception):
    """The provider refused or failed; `code` is its own status or error code. Whether the
    operation happened is unknown (a timeout, an outage): retry with the same reference."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.message = message
        self.code = code


class ProviderRefused(ProviderError):
    """The provider definitively refused: nothing happened at its end, so the caller may
    treat the operation as failed for good (a plain ProviderError's outcome is unknown)."""


class PayoutRejected(ProviderRefused):
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
    description: str | None = None
    due: DueTerms | None = None  # a charge with a due date (cobv), payable for `expires_in`


@dataclass(frozen=True)
class PixCharge:
    txid: str
    br_code: str
    location_id: str | None
    expires_at: datetime


@dataclass(frozen=True)
class PixReturn:
    """A Pix return (devolução) sent back by the original end-to-end id."""

    return_id: str | None  # the rtrId; a return still being processed may have none yet
    status: str  # a RefundStatus value, as RefundState's


@dataclass(frozen=True)
class PaymentRequest:
    """Instructions wanted for one method other than Pix (Pix goes through `create_charge`)."""

    reference: str
    method: str
    amount: int
    currency: str
    expires_in: int
    customer_name: str | None = None
    customer_email: str | None = None
    customer_document: str | None = None
    phone: str | None = None
    return_url: str | None = None


@dataclass(frozen=True)
class PaymentStatusRequest:
    """A payment to ask about, with our record of it: a provider with books of its own reads
    `method` and `provider_reference`; the sandbox, which keeps none, answers from the record."""

    method: str
    provider_reference: str
    status: str  # a TransactionStatus value
    amount: int
    currency: str


@dataclass(frozen=True)
class PaymentInstructions:
    """What the payer needs for one method; fields of other methods stay None."""

    provider_reference: str
    expires_at: datetime
    card_redirect_url: str | None = None
    mb_entity: str | None = None
    mb_reference: str | None = None
    boleto_barcode: str | None = None
    boleto_line: str | None = None
    crypto_address: str | None = None
    crypto_amount: str | None = None
    crypto_network: str | None = None
    crypto_currency: str | None = None


@dataclass(frozen=True)
class ProviderStatus:
    """The provider's own view of a payment: its status word and the raw answer."""

    status: str
    raw: dict


@dataclass(frozen=True)
class RefundRequest:
    """A merchant refund; `reference` (our refund id) makes a retry idempotent."""

    reference: str
    method: str
    strategy: str | None
    amount: int
    currency: str
    payment_reference: str | None
    end_to_end_id: str | None = None
    destination_key: str | None = None


@dataclass(frozen=True)
class RefundStatusRequest:
    """A started refund to ask about, with our record's amount (the sandbox's only book)."""

    provider_reference: str
    amount: int


@dataclass(frozen=True)
class RefundState:
    """Where a refund stands at the provider: IN_PROGRESS, REFUNDED or FAILED."""

    status: str
    failure_reason: str | None = None


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


class PaymentProvider(ABC):
    name: str
    refundable_methods: frozenset[str]
    # Whether a received Pix names its payer's document, so `expected_payer_tax_id` can be
    # checked; a charge that needs it is refused at creation where it cannot.
    reports_payer_document: bool = True

    @abstractmethod
    def supports(self, method: str, currency: str, amount: int) -> bool:
        """Whether this provider can take a `method` payment of `amount` in `currency`."""

    @abstractmethod
    def create_payment(self, request: PaymentRequest) -> PaymentInstructions:
        """Produce the payer's instructions for a method other than Pix; ProviderRefused
        when the provider will not take the payment, ProviderError when it did not answer."""

    @abstractmethod
    def payment_status(self, request: PaymentStatusRequest) -> ProviderStatus:
        """The provider's current status of a payment, read live."""

    @abstractmethod
    def cancel_payment(self, method: str, provider_reference: str) -> None:
        """Withdraw the instructions so the payer can no longer pay them."""

    @abstractmethod
    def refund(self, request: RefundRequest) -> str:
        """Start a refund; returns the provider's reference to poll. Raises ProviderRefused
        when it is refused for good, ProviderError when the outcome is unknown (retry with
        the same request: `reference` makes it idempotent)."""

    @abstractmethod
    def refund_status(self, request: RefundStatusRequest) -> RefundState:
        """Where a started refund stands."""

    @abstractmethod
    def create_charge(self, request: PixChargeRequest) -> PixCharge:
        """Bind a txid and produce the BR Code of an immediate charge."""

    @abstractmethod
    def return_pix(self, end_to_end_id: str, amount: int, refund_id: str) -> PixReturn:
        """Send `amount` back to the payer of `end_to_end_id`; `refund_id` makes it idempotent."""

    @abstractmethod
    def payout(self, request: PayoutRequest) -> PayoutSent:
        """Pay money out; the same `request.reference` always gets the same answer, so a
        retry never pays twice. Raises PayoutRejected when the acquirer refuses it for good,
        ProviderError when the outcome is unknown."""
