"""Payments (the transaction wire format on `/v1/payments`): create, read, cancel, settle.

A payment is the same `Transaction` record as a charge. Creation stores it PENDING and
answers at once; a job finalises it with the provider right after the commit
(`payment_finalisation`), filling each requested method's instructions and moving it to
WAITING_PAYMENT. Rules between fields live here, so the API and the dashboard agree. Listing
is `payment_listing`; resending a webhook and the provider's status are `payment_operations`.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from app.config import PAYMENT_METHODS
from app.errors import Conflict, InvalidRequest, ServiceUnavailable, Unprocessable
from app.extensions import MONEY_QUEUE, db
from app.formats.charges import raw_id
from app.formats.money import Amount
from app.formats.payments import TRANSACTION_ID_PREFIX
from app.marks import translatable
from app.models import Account, KeyMode, Origin, Transaction, TransactionStatus
from app.models.base import utcnow
from app.models.constants import PAYMENT_CURRENCY_CODE
from app.pix.documents import strip_formatting, tax_id_kind
from app.providers import provider_for, provider_named
from app.providers.base import PaymentProvider, ProviderError, ProviderRefused
from app.queueing import enqueue_after_commit
from app.services import customers
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.transactions import (
    charge_expiry,
    charges,
    fraud,
    lifecycle,
    pix_payments,
    settlement,
)
from app.services.webhooks import endpoints as webhook_endpoints

S = TransactionStatus
METHODS = PAYMENT_METHODS
PIX, CARD, MBWAY = "PIX", "CREDIT_CARD", "MBWAY"
DEFAULT_CURRENCY = "BRL"
MAX_CUSTOMER_ID = 128
MAX_CUSTOMER_NAME = 140
MAX_CUSTOMER_DOCUMENT = 32
MAX_URL_LENGTH = 2048
RETURN_URL_KEY = "returnUrl"
PHONE_KEY = "phone"
CANCELLABLE = frozenset({S.WAITING_PAYMENT, S.PENDING, S.PROCESSING})
FINALISE_JOB = "app.jobs.payments.finalise_payment"


@dataclass(frozen=True)
class NewPayment:
    """A payment as the merchant asked for it, before the rules between fields are checked."""

    amount: int
    payment_methods: list[str]
    currency: str = DEFAULT_CURRENCY
    customer_id: str | None = None
    customer_name: str | None = None
    customer_document: str | None = None
    customer_email: str | None = None
    metadata: dict = field(default_factory=dict)
    webhook_url: str | None = None


def create_payment(account_id: str, mode: KeyMode, new: NewPayment) -> Transaction:
    """Store a PENDING payment and ask for its finalisation once the request commits.

    Nothing is created when a rule refuses the request (400), no provider serves a requested
    method in the currency (422) or the velocity guard trips (403).
    """
    fields = _validated(account_id, mode, new)
    provider = provider_for(mode)
    _require_support(provider, fields["payment_methods"], fields["currency"], new.amount)
    now = utcnow()
    fraud.check_velocity(account_id, mode, fields["payer_document"], now)
    expires_in = db.session.get(Account, account_id).charge_expires_in
    payment = Transaction(
        account_id=account_id,
        mode=mode,
        origin=Origin.PAYMENTS,
        status=S.PENDING,
        provider=provider.name,
        expires_in=expires_in,
        # Provisional until finalisation sets the methods' own deadline: without one a PENDING
        # payment would not count as open for the velocity guard, which counts unexpired ones.
        expires_at=now + timedelta(seconds=expires_in),
        created_at=now,
        updated_at=now,
        **fields,
    )
    db.session.add(payment)
    db.session.flush()
    enqueue_after_commit(db.session(), MONEY_QUEUE, FINALISE_JOB, payment.id)
    return payment


def get_payment(account_id: str, mode: KeyMode, payment_id: str) -> Transaction:
    """A transaction by raw, `tx_` or `ch_` id in the caller's account and mode."""
    found = lifecycle.find(account_id, mode, _raw(payment_id))
    return charge_expiry.expire_if_due(found)


def cancel(account_id: str, mode: KeyMode, payment_id: str) -> Transaction:
    """WAITING_PAYMENT, PENDING or PROCESSING → CANCELLED; a Pix held for review goes back
    to its payer. A settled transaction is refunded, not cancelled. The instructions are
    withdrawn before any money is returned, so a refusal there returns nothing; a held Pix
    has used its Pix instructions (the cob is paid), so only the others are withdrawn."""
    payment = lifecycle.lock(get_payment(account_id, mode, payment_id).id)
    cancellability(payment).require()
    held = pix_payments.returnable_held(payment)
    provider = provider_named(payment.provider, payment.mode)
    try:
        settlement.withdraw_instructions(payment, provider, keep=PIX if held else None)
        if held is not None:
            pix_payments.return_held_on_cancel(payment, held)
    except ProviderRefused as error:
        raise Conflict(
            translatable(
                "The provider refused to cancel the payment (%(problem)s); it may have been "
                "paid meanwhile: refund it once it settles."
            ),
            values={"problem": error.message},
            code="transaction_not_cancellable",
        ) from error
    except ProviderError as error:
        raise ServiceUnavailable(
            translatable("The provider could not cancel the payment (%(problem)s); retry."),
            values={"problem": error.message},
        ) from error
    mark_cancelled(payment, translatable("Cancelled by the merchant."))
    return payment


def cancellability(payment: Transaction) -> Allowance:
    """May the merchant cancel it now? Only before it is settled: a settled transaction is
    refunded instead. The provider may still refuse (paid meanwhile); that shows on trying."""
    if payment.status in CANCELLABLE:
        return ALLOWED
    return refused(
        Conflict(
            translatable(
                "A %(status)s transaction cannot be cancelled; only WAITING_PAYMENT, "
                "PENDING or PROCESSING ones can (refund a paid one instead)."
            ),
            values={"status": payment.status},
            code="transaction_not_cancellable",
        )
    )


def mark_cancelled(payment: Transaction, reason: str) -> None:
    """Move a locked payment whose instructions are already withdrawn to CANCELLED, `reason`
    in `metadata.failure`; the move records the events every cancellation sends."""
    payment.metadata_ = {**payment.metadata_, "failure": lifecycle.failure(reason, "canceled")}
    lifecycle.transition(payment, S.CANCELLED)


def settle(
    payment: Transaction, method: str, *, paid_at: datetime, approved: bool = True
) -> Transaction:
    """The provider confirmed a payment by a method other than Pix (Pix settles through
    `pix_payments.receive`). Cards pass through PROCESSING (authorisation) and end APPROVED,
    or REFUSED when the issuer declines; the other methods end PAID."""
    if method == CARD:
        lifecycle.transition(payment, S.PROCESSING)
        if not approved:
            payment.metadata_ = {
                **payment.metadata_,
                "failure": lifecycle.failure(
                    translatable("The card issuer declined the payment."), "declined"
                ),
            }
            lifecycle.transition(payment, S.REFUSED)
            return payment
    settlement.credit(
        payment,
        method=method,
        amount=payment.amount,
        paid_at=paid_at,
        description=f"{method} payment {payment.provider_reference or payment.id}",
        status=S.APPROVED if method == CARD else S.PAID,
    )
    return payment


def _raw(payment_id: str) -> str:
    return raw_id(payment_id.removeprefix(TRANSACTION_ID_PREFIX))


def _require_support(
    provider: PaymentProvider, methods: list[str], currency: str, amount: int
) -> None:
    unserved = [method for method in methods if not provider.supports(method, currency, amount)]
    if unserved:
        raise Unprocessable(
            translatable(
                "No provider serves %(methods)s for %(amount)s; choose another method or currency."
            ),
            values={"methods": ", ".join(unserved), "amount": Amount(amount, currency)},
            code="unprocessable_entity",
        )


def _validated(account_id: str, mode: KeyMode, new: NewPayment) -> dict:
    """The columns of a new payment, or 400 naming the first field that breaks a rule."""
    if new.amount <= 0 or new.amount > charges.MAX_AMOUNT:
        raise InvalidRequest(
            f"amount is an integer from 1 to {charges.MAX_AMOUNT} in the smallest unit.",
            code="invalid_amount",
            param="amount",
        )
    currency = new.currency.strip()
    if not PAYMENT_CURRENCY_CODE.fullmatch(currency.upper()) or not currency.isascii():
        raise InvalidRequest(
            "currency is 3 to 8 letters or digits, such as BRL, EUR or USDT.", param="currency"
        )
    currency = currency.upper()
    methods = _payment_methods(new.payment_methods)
    metadata = charges.clean_metadata(new.metadata)
    _check_method_metadata(methods, metadata)
    document = _customer_document(new.customer_document)
    return {
        "amount": new.amount,
        "currency": currency,
        "payment_methods": methods,
        "customer_id": _bounded(new.customer_id, MAX_CUSTOMER_ID, "customerId"),
        "customer_name": _bounded(new.customer_name, MAX_CUSTOMER_NAME, "customerName"),
        "customer_document": document,
        "customer_email": customers.email(new.customer_email, "customerEmail"),
        "payer_document": document if document and tax_id_kind(document) else None,
        "metadata_": metadata,
        "webhook_url": _webhook_url(account_id, mode, new.webhook_url),
    }


def _payment_methods(requested: list[str]) -> list[str]:
    if not requested:
        raise InvalidRequest("paymentMethods needs at least one method.", param="paymentMethods")
    unknown = [method for method in requested if method not in METHODS]
    if unknown:
        raise InvalidRequest(
            f"Unknown payment method {unknown[0]}; use {', '.join(METHODS)}.",
            param="paymentMethods",
        )
    if len(set(requested)) != len(requested):
        raise InvalidRequest("List each payment method once.", param="paymentMethods")
    return list(requested)


def _check_method_metadata(methods: list[str], metadata: dict) -> None:
    """`returnUrl` (card) must be an absolute web address; MB WAY needs `phone` in E.164."""
    return_url = metadata.get(RETURN_URL_KEY)
    if return_url is not None and not _is_web_url(return_url):
        raise InvalidRequest(
            "metadata.returnUrl is an absolute http(s) address.", param="metadata.returnUrl"
        )
    if MBWAY in methods:
        phone = metadata.get(PHONE_KEY)
        if not isinstance(phone, str):
            raise InvalidRequest(
                "MBWAY needs metadata.phone in E.164 form, for example +351912345678.",
                param="metadata.phone",
            )
        customers.phone(phone, "metadata.phone")


def _is_web_url(value) -> bool:
    if not isinstance(value, str) or len(value) > MAX_URL_LENGTH:
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _customer_document(value: str | None) -> str | None:
    """CPF, CNPJ, NIF or another tax id: kept without formatting; a CPF or CNPJ also feeds
    the velocity guard (by payer)."""
    document = _bounded(value, MAX_CUSTOMER_DOCUMENT, "customerDocument")
    if document is None:
        return None
    document = strip_formatting(document).upper()
    if not (document.isascii() and document.isalnum()):
        raise InvalidRequest(
            "customerDocument holds letters and digits (formatting such as . - / is removed).",
            param="customerDocument",
        )
    return document


def _bounded(value: str | None, limit: int, param: str) -> str | None:
    value = (value or "").strip()
    if len(value) > limit:
        raise InvalidRequest(f"{param} is at most {limit} characters.", param=param)
    return value or None


def _webhook_url(account_id: str, mode: KeyMode, url: str | None) -> str | None:
    """The per-transaction webhook must be one of the account's registered endpoints, so
    its deliveries are signed with a secret the merchant holds."""
    if url is None:
        return None
    if webhook_endpoints.active_endpoint_at(account_id, mode, url) is None:
        raise InvalidRequest(
            "webhookUrl must be the URL of an active webhook endpoint of this account "
            "(register it with POST /v1/webhooks/endpoints first, so its deliveries are "
            "signed with a secret you hold).",
            code="webhook_url_not_registered",
            param="webhookUrl",
        )
    return url
