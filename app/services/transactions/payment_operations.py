"""Operations on a payment beside its life: announcing its status again (`resend_webhook`)
and reading the provider's live view of it (`provider_status`).
"""

import sqlalchemy as sa

from app.errors import ServiceUnavailable, Unprocessable
from app.extensions import db
from app.formats.payments import payment_event_data
from app.models import Event, KeyMode, Transaction
from app.providers import provider_named
from app.providers.base import PaymentStatusRequest, ProviderError, ProviderRefused, ProviderStatus
from app.services.events import record_event
from app.services.transactions import lifecycle
from app.services.transactions.payments import get_payment
from app.services.webhooks import relay as webhook_relay

NO_PROVIDER_REFERENCE = "TRANSACTION_HAS_NO_PROVIDER_REFERENCE"


def resend_webhook(account_id: str, mode: KeyMode, payment_id: str) -> dict:
    """Announce the current status again as a fresh event (new `evt_` id, so every endpoint
    gets a new delivery); `resent` is false when no status event exists or nobody listens."""
    payment = get_payment(account_id, mode, payment_id)
    heard = [
        event_type
        for event_type in lifecycle.EVENTS_ON_ENTRY.get(payment.status, ())
        if event_type.startswith(webhook_relay.TRANSACTION_EVENT_PREFIX)
        and webhook_relay.has_listener(payment, event_type)
    ]
    for event_type in heard:
        record_event(
            payment.account_id,
            payment.mode,
            event_type,
            _last_announcement(payment, event_type),
            subject_type="transaction",
            subject_id=payment.id,
        )
    return {"resent": bool(heard), "status": str(payment.status)}


def provider_status(account_id: str, mode: KeyMode, payment_id: str) -> dict:
    """The provider's live view next to ours; `error` says when there is nothing to ask."""
    payment = get_payment(account_id, mode, payment_id)
    answer = {
        "localStatus": str(payment.status),
        "provider": payment.provider,
        "providerTransactionId": payment.provider_reference,
        "providerStatus": None,
        "rawResponse": None,
    }
    if not payment.provider_reference:
        return answer | {"error": NO_PROVIDER_REFERENCE}
    status = _ask_provider(payment)
    return answer | {"providerStatus": status.status, "rawResponse": status.raw}


def _ask_provider(payment: Transaction) -> ProviderStatus:
    provider = provider_named(payment.provider, payment.mode)
    try:
        return provider.payment_status(
            PaymentStatusRequest(
                method=payment.reference_method,
                provider_reference=payment.provider_reference,
                status=payment.status,
                amount=payment.amount,
                currency=payment.currency,
            )
        )
    except ProviderRefused as error:
        raise Unprocessable(
            f"The provider refused to report on this payment ({error.message})."
        ) from error
    except ProviderError as error:
        raise ServiceUnavailable(
            f"The provider did not answer ({error.message}); retry with backoff."
        ) from error


def _last_announcement(payment: Transaction, event_type: str) -> dict:
    """The data of the event that announced this status, or the status as it stands."""
    announced = db.session.scalar(
        sa.select(Event.data)
        .where(
            Event.subject_type == "transaction",
            Event.subject_id == payment.id,
            Event.type == event_type,
        )
        .order_by(Event.created_at.desc())
        .limit(1)
    )
    return announced or payment_event_data(payment, payment.status, payment.updated_at)
