"""Payments (the transaction wire format on `/v1/payments`): create, finalise, read, list,
cancel, settle, and the operations around them (resend webhook, provider status).

A payment is the same `Transaction` record as a charge. Creation stores it PENDING and
answers at once; a job finalises it with the provider right after the commit (a sweep
catches any whose job never ran), filling each requested method's instructions and moving
it to WAITING_PAYMENT. Rules between fields live here, so the API and the dashboard agree.
"""

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from app.config import PAYMENT_METHODS
from app.errors import Conflict, InvalidRequest, ServiceUnavailable, Unprocessable
from app.extensions import MONEY_QUEUE, db
from app.formats.charges import raw_id
from app.formats.payments import TRANSACTION_ID_PREFIX, payment_event_data
from app.models import Account, Event, KeyMode, Origin, Transaction, TransactionStatus
from app.models.base import utcnow
from app.models.constants import PAYMENT_CURRENCY_CODE
from app.pix.documents import strip_formatting, tax_id_kind
from app.providers import provider_for, provider_named
from app.providers.base import (
    PaymentProvider,
    PaymentRequest,
    PaymentStatusRequest,
    ProviderError,
    ProviderRefused,
    ProviderStatus,
)
from app.queueing import enqueue_after_commit
from app.services import customers
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.events import record_event
from app.services.paging import paged
from app.services.transactions import charges, fraud, lifecycle, pix_payments, settlement
from app.services.webhooks import endpoints as webhook_endpoints
from app.services.webhooks import relay as webhook_relay

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
FINALISE_GRACE = timedelta(seconds=5)  # a payment's own job normally runs well within this
DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 100
NO_PROVIDER_REFERENCE = "TRANSACTION_HAS_NO_PROVIDER_REFERENCE"
# Sort keys of GET /v1/payments: every top-level field of the payment object, as shown (a
# field shown null sorts as null, so last). `status` is replaced per request by the status a
# reader sees (`_shown_status`).
_NET_AMOUNT = Transaction.amount - Transaction.provider_fee - Transaction.platform_fee
_BOLETO_PDF_URL = sa.case((Transaction.boleto_barcode.is_not(None), Transaction.id))
SORTABLE = {
    "id": Transaction.id,
    "status": Transaction.status,
    "amount": Transaction.amount,
    "currency": Transaction.currency,
    "paymentMethods": sa.cast(Transaction.payment_methods, sa.Text),
    "paidWith": Transaction.paid_with,
    "pixQrCode": Transaction.pix_location_id,
    "pixCopyPaste": Transaction.pix_br_code,
    "pixExpiresAt": Transaction.pix_expires_at,
    "cardRedirectUrl": Transaction.card_redirect_url,
    "mbEntity": Transaction.mb_entity,
    "mbReference": Transaction.mb_reference,
    "mbExpiresAt": Transaction.mb_expires_at,
    "boletoBarcode": Transaction.boleto_barcode,
    "boletoLine": Transaction.boleto_line,
    "boletoPdfUrl": _BOLETO_PDF_URL,  # …/checkout/<id>/boleto.pdf
    "boletoExpiresAt": Transaction.boleto_expires_at,
    "cryptoAddress": Transaction.crypto_address,
    "cryptoAmount": Transaction.crypto_amount,
    "cryptoNetwork": Transaction.crypto_network,
    "cryptoCurrency": Transaction.crypto_currency,
    "providerFee": Transaction.provider_fee,
    "platformFee": Transaction.platform_fee,
    "netAmount": _NET_AMOUNT,
    "metadata": sa.cast(Transaction.metadata_, sa.Text),
    "createdAt": Transaction.created_at,
    "paidAt": Transaction.paid_at,
}


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


@dataclass(frozen=True)
class PaymentQuery:
    """One page of `GET /v1/payments` (or the dashboard's list): filters and order."""

    page: int = 1
    limit: int = DEFAULT_PAGE_LIMIT
    status: TransactionStatus | None = None
    method: str | None = None  # offered (paid or not); the dashboard's filter
    start: datetime | None = None
    end: datetime | None = None
    sort_by: str = "createdAt"
    descending: bool = True


@dataclass(frozen=True)
class ListedPayment:
    """A transaction with the status a reader sees (`_shown_status`), read without writing."""

    payment: Transaction
    status: str


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


def finalise(transaction_id: str) -> Transaction:
    """Ask the provider for every requested method's instructions; WAITING_PAYMENT when all
    came, REFUSED (reason in `metadata.failure`) when the provider refused one. Only a
    PENDING payment is finalised, so a second run, or one after a cancel, does nothing; one
    whose window elapsed before it could be finalised expires instead. On a refusal the
    instructions already issued are withdrawn and cleared. A ProviderError of unknown outcome
    (a timeout) propagates: the payment stays PENDING and the sweep asks again."""
    payment = charges.expire_if_due(lifecycle.lock(transaction_id))
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
            "failure": charges.failure(error.message, error.code),
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


def get_payment(account_id: str, mode: KeyMode, payment_id: str) -> Transaction:
    """A transaction by raw, `tx_` or `ch_` id in the caller's account and mode."""
    found = lifecycle.find(account_id, mode, _raw(payment_id))
    return charges.expire_if_due(found)


def list_payments(
    account_id: str, mode: KeyMode, query: PaymentQuery
) -> tuple[list[Transaction], int]:
    """One page of the account's transactions and how many match in all."""
    now = utcnow()
    found = paged(_listing(account_id, mode, query, now), query.page, query.limit)
    return charges.expire_listed(found.rows, now), found.total


def payment_rows(
    account_id: str, mode: KeyMode, query: PaymentQuery, chunk_size: int
) -> Iterator[ListedPayment]:
    """Every transaction `list_payments` finds for `query`, on any page, for an export: read
    `chunk_size` rows per query, none created after the export started (so the pages never
    shift), and read-only (an overdue one is shown EXPIRED; the sweep stores it), so a long
    export holds no lock and needs no commit."""
    now = utcnow()
    query = replace(query, limit=chunk_size, end=min(query.end, now) if query.end else now)
    for page in itertools.count(1):
        rows = _listed_page(account_id, mode, replace(query, page=page))
        yield from rows
        if len(rows) < chunk_size:
            return


def _listed_page(account_id: str, mode: KeyMode, query: PaymentQuery) -> list[ListedPayment]:
    now = utcnow()
    listing = _listing(account_id, mode, query, now).add_columns(_shown_status(now))
    found = db.session.execute(listing.offset((query.page - 1) * query.limit).limit(query.limit))
    return [ListedPayment(payment, status) for payment, status in found]


def _listing(account_id: str, mode: KeyMode, query: PaymentQuery, now: datetime) -> sa.Select:
    """The transactions `query` matches, in its order (every page of it)."""
    conditions = [Transaction.account_id == account_id, Transaction.mode == mode]
    if query.status is not None:
        conditions.append(charges.status_condition({query.status}, now))
    if query.method is not None:
        conditions.append(offers(query.method))
    if query.start is not None:
        conditions.append(Transaction.created_at >= query.start)
    if query.end is not None:
        conditions.append(Transaction.created_at <= query.end)
    key = _shown_status(now) if query.sort_by == "status" else SORTABLE[query.sort_by]
    order = [key.desc(), Transaction.id.desc()] if query.descending else [key.asc(), Transaction.id]
    return sa.select(Transaction).where(*conditions).order_by(_nulls_last(order[0], key), order[1])


def _nulls_last(ordering: sa.ColumnElement, key: sa.ColumnElement) -> sa.ColumnElement:
    """Empty values sort last, but a column that cannot be empty keeps its plain order: that
    is the listing index's order, so a page by `createdAt` reads the index instead of sorting
    the whole account (PostgreSQL's DESC is NULLS FIRST)."""
    column = getattr(key, "expression", key)
    return ordering if getattr(column, "nullable", True) is False else ordering.nulls_last()


def offers(method: str) -> sa.ColumnElement[bool]:
    """The SQL test for transactions offering `method`. On PostgreSQL the JSONB `?` operator
    (is the string an element of the array; about 3x cheaper per row than re-serialising the
    JSONB to text, which the metrics' funnel does once per method). On SQLite the JSON text
    is `["PIX", "BOLETO"]`, and the quotes keep one name from matching inside another."""
    if db.engine.dialect.name == "postgresql":
        return sa.type_coerce(Transaction.payment_methods, JSONB).has_key(method)
    return sa.cast(Transaction.payment_methods, sa.Text).like(f'%"{method}"%')


def _shown_status(now: datetime) -> sa.ColumnElement[str]:
    """The status as the list shows it: an unpaid transaction past its deadline is EXPIRED
    before the expiry sweep stores it (as `charges.status_condition` filters)."""
    return sa.case(
        (charges.overdue_condition(now), sa.literal(S.EXPIRED.value)),
        else_=sa.cast(Transaction.status, sa.String),
    )


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
            f"The provider refused to cancel the payment ({error.message}); it may have been "
            "paid meanwhile: refund it once it settles.",
            code="transaction_not_cancellable",
        ) from error
    except ProviderError as error:
        raise ServiceUnavailable(
            f"The provider could not cancel the payment ({error.message}); retry."
        ) from error
    mark_cancelled(payment, "Cancelled by the merchant.")
    return payment


def cancellability(payment: Transaction) -> Allowance:
    """May the merchant cancel it now? Only before it is settled: a settled transaction is
    refunded instead. The provider may still refuse (paid meanwhile); that shows on trying."""
    if payment.status in CANCELLABLE:
        return ALLOWED
    return refused(
        Conflict(
            f"A {payment.status} transaction cannot be cancelled; only WAITING_PAYMENT, "
            "PENDING or PROCESSING ones can (refund a paid one instead).",
            code="transaction_not_cancellable",
        )
    )


def mark_cancelled(payment: Transaction, reason: str) -> None:
    """Move a locked payment whose instructions are already withdrawn to CANCELLED, `reason`
    in `metadata.failure`; the move records the events every cancellation sends."""
    payment.metadata_ = {**payment.metadata_, "failure": charges.failure(reason, "canceled")}
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
                "failure": charges.failure("The card issuer declined the payment.", "declined"),
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


def _raw(payment_id: str) -> str:
    return raw_id(payment_id.removeprefix(TRANSACTION_ID_PREFIX))


def _require_support(
    provider: PaymentProvider, methods: list[str], currency: str, amount: int
) -> None:
    unserved = [method for method in methods if not provider.supports(method, currency, amount)]
    if unserved:
        raise Unprocessable(
            f"No provider serves {', '.join(unserved)} for {amount} in {currency}; "
            "choose another method or currency.",
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
