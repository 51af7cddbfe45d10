"""What a person reads for a status code: the dashboard, PDFs and e-mails show these labels in
the reader's language (`app.i18n`), while the API and exports keep the codes.

Labels are lazy (`lazy_gettext`): each is translated when a page or document writes it, in
the language of that page or document. English the API answers with and pages also show
(event descriptions, refusal reasons) is marked with `app.marks.translatable` where it is
written, and translated by the page that shows it.
"""

import enum

from flask_babel import lazy_gettext as _l

from app.models import (
    DeliveryStatus,
    DisputeStatus,
    DisputeType,
    EndpointStatus,
    EvidenceUploader,
    KeyMode,
    MoneyOutcome,
    PayoutStatus,
    RefundStatus,
    Role,
    TransactionStatus,
)

TRANSACTION_STATUS_LABELS = {
    TransactionStatus.PENDING: _l("Pending"),
    TransactionStatus.WAITING_PAYMENT: _l("Waiting for payment"),
    TransactionStatus.PROCESSING: _l("Processing"),
    TransactionStatus.PAID: _l("Paid"),
    TransactionStatus.APPROVED: _l("Approved"),
    TransactionStatus.REFUSED: _l("Refused"),
    TransactionStatus.CANCELLED: _l("Cancelled"),
    TransactionStatus.EXPIRED: _l("Expired"),
    TransactionStatus.REFUNDED: _l("Refunded"),
    TransactionStatus.CHARGEBACK: _l("Chargeback"),
    TransactionStatus.DISPUTE: _l("In dispute"),
}
REFUND_STATUS_LABELS = {
    RefundStatus.PENDING: _l("Pending"),
    RefundStatus.IN_PROGRESS: _l("In progress"),
    RefundStatus.REFUNDED: _l("Refunded"),
    RefundStatus.FAILED: _l("Failed"),
}
PAYOUT_STATUS_LABELS = {
    PayoutStatus.PENDING: _l("Waiting for approval"),
    PayoutStatus.APPROVED: _l("Approved"),
    PayoutStatus.PROCESSING: _l("Processing"),
    PayoutStatus.COMPLETED: _l("Completed"),
    PayoutStatus.FAILED: _l("Failed"),
    PayoutStatus.REJECTED: _l("Rejected"),
    PayoutStatus.CANCELLED: _l("Cancelled"),
}
DISPUTE_STATUS_LABELS = {
    DisputeStatus.OPEN: _l("Open"),
    DisputeStatus.APPEALED: _l("Appealed"),
    DisputeStatus.ACCEPTED: _l("Accepted"),
    DisputeStatus.REJECTED: _l("Rejected"),
    DisputeStatus.CLOSED: _l("Closed"),
}
# A case's type; the API, the CSV and the filters keep the codes.
DISPUTE_TYPE_LABELS = {
    DisputeType.MED: _l("MED"),
    DisputeType.CHARGEBACK: _l("Chargeback"),
    DisputeType.DISPUTE: _l("Dispute"),
    DisputeType.FRAUD: _l("Fraud"),
}
ENDPOINT_STATUS_LABELS = {
    EndpointStatus.ACTIVE: _l("Active"),
    EndpointStatus.INACTIVE: _l("Inactive"),
}
DELIVERY_STATUS_LABELS = {
    DeliveryStatus.PENDING: _l("Pending"),
    DeliveryStatus.PROCESSING: _l("Sending"),
    DeliveryStatus.DELIVERED: _l("Delivered"),
    DeliveryStatus.FAILED: _l("Failed"),
    DeliveryStatus.CANCELLED: _l("Cancelled"),
}
# Who attached a piece of evidence, as the evidence table says it.
UPLOADER_LABELS = {
    EvidenceUploader.MERCHANT: _l("merchant"),
    EvidenceUploader.PARTNER: _l("partner"),
    EvidenceUploader.PLATFORM: _l("platform"),
}
# The mode badge beside a record on the back-office pages (the CSS class keeps the code).
MODE_LABELS = {KeyMode.TEST: _l("test"), KeyMode.LIVE: _l("live")}
MONEY_OUTCOME_LABELS = {
    MoneyOutcome.REFUNDED_TO_MERCHANT: _l("Kept by you"),
    MoneyOutcome.CLOSED_WITHOUT_REFUND: _l("Closed without a refund"),
    MoneyOutcome.LOST: _l("Lost"),
}
# A MED notification's fraud type, as the Banco Central's rules name them (codes in the API).
MED_METHOD_LABELS = {
    "scam": _l("Scam"),
    "unauthorized": _l("Transaction not authorised"),
    "coercion": _l("Coercion"),
    "invasion": _l("Account takeover"),
    "other": _l("Other"),
}
ROLE_LABELS = {
    Role.OWNER: _l("Owner"),
    Role.ADMIN: _l("Admin"),
    Role.MEMBER: _l("Member"),
}
LABELS_BY_ENUM = {
    TransactionStatus: TRANSACTION_STATUS_LABELS,
    RefundStatus: REFUND_STATUS_LABELS,
    PayoutStatus: PAYOUT_STATUS_LABELS,
    DisputeStatus: DISPUTE_STATUS_LABELS,
    DisputeType: DISPUTE_TYPE_LABELS,
    EndpointStatus: ENDPOINT_STATUS_LABELS,
    DeliveryStatus: DELIVERY_STATUS_LABELS,
    Role: ROLE_LABELS,
    MoneyOutcome: MONEY_OUTCOME_LABELS,
    EvidenceUploader: UPLOADER_LABELS,
    KeyMode: MODE_LABELS,
}


def label(value: enum.Enum) -> str:
    """A code's label in the current language (a status a refusal names, say); a code with no
    label table stays the code."""
    return str(LABELS_BY_ENUM.get(type(value), {}).get(value, value))
