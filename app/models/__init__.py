"""SQLAlchemy models, one module per aggregate; imported here so Alembic sees every table."""

from app.models.account import Account, Membership, Role, User
from app.models.api_key import ApiKey, KeyMode
from app.models.audit import AuditLog
from app.models.auth_token import RevokedToken
from app.models.constants import DISPUTED_STATUSES, SETTLED_STATUSES
from app.models.dispute import (
    FINAL_DISPUTE_STATUSES,
    DisputeCase,
    DisputeEvidence,
    DisputeStatus,
    DisputeType,
    EvidenceUploader,
    MoneyOutcome,
)
from app.models.event import Event
from app.models.idempotency import IdempotencyKey
from app.models.ledger import (
    LedgerAccount,
    LedgerEntry,
    LedgerPosting,
    SettlementRelease,
    Wallet,
    WalletType,
)
from app.models.payment_totals import (
    PaymentDayPaidVolume,
    PaymentDayTotal,
    PaymentDayVolume,
    PaymentMonthVolume,
    PaymentTotalChange,
)
from app.models.payout import Payout, PayoutStatus, PayoutType
from app.models.psp_notice import PspNotice, PspNoticeKind
from app.models.refund import (
    FINAL_REFUND_STATUSES,
    PendingReason,
    Refund,
    RefundStatus,
    RefundStrategy,
)
from app.models.transaction import (
    Origin,
    ReceivedPix,
    ReceivedPixOutcome,
    Transaction,
    TransactionStatus,
)
from app.models.webhook import (
    DeliveryStatus,
    EndpointStatus,
    WebhookDelivery,
    WebhookEndpoint,
)

__all__ = [
    "DISPUTED_STATUSES",
    "FINAL_DISPUTE_STATUSES",
    "FINAL_REFUND_STATUSES",
    "SETTLED_STATUSES",
    "Account",
    "ApiKey",
    "AuditLog",
    "DeliveryStatus",
    "DisputeCase",
    "DisputeEvidence",
    "DisputeStatus",
    "DisputeType",
    "EndpointStatus",
    "Event",
    "EvidenceUploader",
    "IdempotencyKey",
    "KeyMode",
    "LedgerAccount",
    "LedgerEntry",
    "LedgerPosting",
    "Membership",
    "MoneyOutcome",
    "Origin",
    "PaymentDayPaidVolume",
    "PaymentDayTotal",
    "PaymentDayVolume",
    "PaymentMonthVolume",
    "PaymentTotalChange",
    "Payout",
    "PayoutStatus",
    "PayoutType",
    "PendingReason",
    "PspNotice",
    "PspNoticeKind",
    "ReceivedPix",
    "ReceivedPixOutcome",
    "Refund",
    "RefundStatus",
    "RefundStrategy",
    "RevokedToken",
    "Role",
    "SettlementRelease",
    "Transaction",
    "TransactionStatus",
    "User",
    "Wallet",
    "WalletType",
    "WebhookDelivery",
    "WebhookEndpoint",
]
