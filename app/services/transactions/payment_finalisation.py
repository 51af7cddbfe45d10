"""Finalising a payment with the provider: each requested method's instructions, or REFUSED
with none, and the PENDING payments whose finalisation job should have run by now.

`payments.create_payment` stores a payment PENDING and queues `jobs/payments.finalise_payment`
after the commit; the job and its sweep (`unfinalised`) call `finalise` here.
"""

from datetime import datetime, timedelta

import sqlalchemy as sa

from app.extensions import db
from app.models import Account, Origin, Transaction, TransactionStatus
from app.models.base import utcnow
from app.providers import provider_named
from app.providers.base import PaymentProvider, PaymentRequest, ProviderRefused
from app.services.transactions import charge_expiry, charges, lifecycle, settlement
from app.services.transactions.payments import CARD, MBWAY, PHONE_KEY, PIX, RETURN_URL_KEY

S = TransactionStatus
FINALISE_GRACE = timedelta(seconds=5)  # a payment's own job normally runs well within this


def finalise(transaction_id: str) -> Transaction:
    """Ask the provider for every requested method's instructions; WAITING_PAYMENT when all
    came, REFUSED (reason in `metadata.failure`) when the provider refused one. Only a
    PENDING payment is finalised, so a second run, or one after a cancel, does nothing; one
    whose window elapsed before it could be finalised expires instead. On a refusal the
    instructions already issued are withdrawn and cleared. A ProviderError of unknown outcome
    (a timeout) propagates: the payment stays PENDING and the sweep asks again."""
    payment = charge_expiry.expire_if_due(lifecycle.lock(transaction_id))
    if payment.status is not S.PENDING:
        return payment
    provider = provider_named(payment.provider, payment.mode)
    account = db.session.get(Account, payment.account_id)
    try:
        deadlines = [_instruct(payment, m, provider, account) for m in payment.payment_methods]
    except ProviderRefused as error:
        settlement.withdraw_instructions(payment, provider)
        _clear_instructions(payment)
        payment.metadata_ = {
            **payment.metadata_,
            "failure": lifecycle.failure(error.message, error.code),
        }
        lifecycle.transition(payment, S.REFUSED)
        return payment
    payment.expires_at = max(deadlines)
    payment.finalised_at = utcnow()
    lifecycle.transition(payment, S.WAITING_PAYMENT)
    return payment


def unfinalised(now: datetime | None = None, limit: int = 100) -> list[str]:
    """PENDING payments whose finalisation job should have run by now (Redis was down)."""
    cutoff = (now or utcnow()) - FINALISE_GRACE
    return list(
        db.session.scalars(
            sa.select(Transaction.id)
            .where(
                Transaction.status == S.PENDING,
                Transaction.origin == Origin.PAYMENTS,
                Transaction.created_at <= cutoff,
            )
            .order_by(Transaction.created_at)
            .limit(limit)
        )
    )


def _instruct(
    payment: Transaction, method: str, provider: PaymentProvider, account: Account
) -> datetime:
    """Fill one method's instructions on the payment; returns until when they hold."""
    if method == PIX:
        pix = provider.create_charge(charges.pix_request(payment, account))
        charges.apply_pix(payment, pix)
        return pix.expires_at
    metadata = payment.metadata_
    given = provider.create_payment(
        PaymentRequest(
            reference=payment.id,
            method=method,
            amount=payment.amount,
            currency=payment.currency,
            expires_in=payment.expires_in,
            customer_name=payment.customer_name,
            customer_email=payment.customer_email,
            customer_document=payment.customer_document,
            phone=metadata.get(PHONE_KEY) if method == MBWAY else None,
            return_url=metadata.get(RETURN_URL_KEY) if method == CARD else None,
        )
    )
    payment.provider_references = {**payment.provider_references, method: given.provider_reference}
    if method == CARD:
        payment.card_redirect_url = given.card_redirect_url
    elif method == "MULTIBANCO":
        payment.mb_entity, payment.mb_reference = given.mb_entity, given.mb_reference
        payment.mb_expires_at = given.expires_at
    elif method == "BOLETO":
        payment.boleto_barcode, payment.boleto_line = given.boleto_barcode, given.boleto_line
        payment.boleto_expires_at = given.expires_at
    elif method == "CRYPTO":
        payment.crypto_address, payment.crypto_amount = given.crypto_address, given.crypto_amount
        payment.crypto_network = given.crypto_network
        payment.crypto_currency = given.crypto_currency
    return given.expires_at


INSTRUCTION_COLUMNS = (
    "pix_txid",
    "pix_br_code",
    "pix_location_id",
    "pix_expires_at",
    "card_redirect_url",
    "mb_entity",
    "mb_reference",
    "mb_expires_at",
    "boleto_barcode",
    "boleto_line",
    "boleto_expires_at",
    "crypto_address",
    "crypto_amount",
    "crypto_network",
    "crypto_currency",
)


def _clear_instructions(payment: Transaction) -> None:
    """A refused payment shows no instructions: nothing of it can be paid."""
    for column in INSTRUCTION_COLUMNS:
        setattr(payment, column, None)
    payment.provider_references = {}
