"""Pix charges: creation with every body rule of the contract, lookup and listing.

The API (`/v1/charges`, `/v1/pix/charges`) and the dashboard's test-charge form call these
functions; expiry is `charge_expiry`. A charge is a `Transaction` read through the Charge format.
"""

import json
import math
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol

import sqlalchemy as sa

from app.business_days import sao_paulo_day
from app.errors import Conflict, InvalidRequest, ServiceUnavailable, Unprocessable
from app.extensions import db, outside_transaction
from app.formats.charges import CHARGE_ID_PREFIX, raw_id, statuses_for
from app.formats.money import Amount
from app.marks import translatable
from app.models import Account, KeyMode, Origin, Transaction, TransactionStatus
from app.models.base import new_id, utcnow
from app.pix import due
from app.pix.brcode import MAX_AMOUNT
from app.pix.due import DueTerms
from app.providers import provider_for
from app.providers.base import (
    PaymentProvider,
    PixCharge,
    PixChargeRequest,
    ProviderError,
    ProviderRefused,
)
from app.services import customers
from app.services.allowances import ALLOWED, Allowance, refused
from app.services.transactions import charge_expiry, fraud, lifecycle

PIX = "PIX"
PIX_CURRENCY = "BRL"
MIN_EXPIRES_IN = 60
MAX_EXPIRES_IN = 86_400
MAX_DESCRIPTION = 500
RESERVED_METADATA_KEYS = frozenset({"description", "failure", "med"})
MAX_METADATA_KEYS = 50
MAX_METADATA_KEY_LENGTH = 40
MAX_METADATA_BYTES = 8_192
DEFAULT_LIST_LIMIT = 25
MAX_LIST_LIMIT = 100


@dataclass(frozen=True)
class Customer:
    name: str | None = None
    document: str | None = None
    email: str | None = None
    phone: str | None = None


@dataclass(frozen=True)
class NewCharge:
    amount: int
    payment_method: str = "pix"
    currency: str = PIX_CURRENCY
    description: str | None = None
    expires_in: int | None = None
    customer: Customer = field(default_factory=Customer)
    expected_payer_tax_id: str | None = None
    metadata: dict = field(default_factory=dict)
    due: DueTerms | None = None


@dataclass(frozen=True)
class ChargeQuery:
    limit: int = DEFAULT_LIST_LIMIT
    starting_after: str | None = None
    status: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    customer_id: str | None = None


@dataclass(frozen=True)
class ChargePage:
    data: list[Transaction]
    has_more: bool

    @property
    def next_cursor(self) -> str | None:
        return CHARGE_ID_PREFIX + self.data[-1].id if self.has_more else None


def create_charge(
    account_id: str,
    mode: KeyMode,
    new: NewCharge,
    *,
    origin: Origin = Origin.CHARGES,
    terms: "ChargeTerms | None" = None,
) -> Transaction:
    """Create a Pix charge: pending with its code, or failed when the provider cannot make one.

    `terms` are the account's as the caller holds them current (an API request's key carries
    them: `api_key_cache`); without them they are read.

    Nothing is created when a rule refuses the request (400), no provider serves the mode
    (422), the velocity guard trips (403) or the provider's answer is lost (503: retry with
    the same idempotency key).
    """
    now = utcnow()
    fields = _validated(new, now)
    provider = provider_for(mode)
    _require_payer_check(provider, fields["expected_payer_tax_id"])
    merchant = terms or db.session.execute(_CHARGE_TERMS, {"account_id": account_id}).one()
    fraud.check_velocity(account_id, mode, fields["payer_document"], now)
    expires_in = (
        fields.pop("expires_in") or _due_expires_in(new.due, now) or merchant.charge_expires_in
    )
    charge = Transaction(
        id=new_id(),  # given up front: the provider needs it, and the row is inserted once
        account_id=account_id,
        mode=mode,
        origin=origin,
        status=TransactionStatus.PENDING,
        payment_methods=[PIX],
        provider_references={},
        expires_in=expires_in,
        created_at=now,
        updated_at=now,
        **fields,
    )
    db.session.add(charge)
    try:
        pix = provider.create_charge(pix_request(charge, merchant))
    except ProviderRefused as error:
        charge.provider = provider.name
        charge.metadata_ = {
            **charge.metadata_,
            "failure": lifecycle.failure(error.message, error.code),
        }
        lifecycle.transition(charge, TransactionStatus.REFUSED)
        return charge
    except ProviderError as error:
        raise ServiceUnavailable(
            translatable(
                "The Pix provider did not answer (%(problem)s); retry with the same "
                "Idempotency-Key."
            ),
            values={"problem": error.message},
        ) from error
    charge.provider = provider.name
    apply_pix(charge, pix)
    charge.expires_at = pix.expires_at
    charge.finalised_at = now
    lifecycle.transition(charge, TransactionStatus.WAITING_PAYMENT)
    return charge


# What a charge needs of its account, read as three columns built once rather than the whole
# ORM row: 0.3 ms of CPU less a charge (0.42 against 0.71-0.77 ms, measured in process).
_ACCOUNTS = Account.__table__
_CHARGE_TERMS = sa.select(_ACCOUNTS.c.name, _ACCOUNTS.c.city, _ACCOUNTS.c.charge_expires_in).where(
    _ACCOUNTS.c.id == sa.bindparam("account_id")
)


class Merchant(Protocol):
    """What a Pix code names of its account: an `Account`, or a row of `_CHARGE_TERMS`."""

    name: str
    city: str


class ChargeTerms(Merchant, Protocol):
    """What a charge needs of its account: a row of `_CHARGE_TERMS`, an `Account`, or the
    terms an API key is remembered with."""

    charge_expires_in: int


def _require_payer_check(provider: PaymentProvider, payer_lock: str | None) -> None:
    """A payer lock the provider cannot check would hold every payment for manual review:
    refused now, while the merchant can still choose, rather than an order stuck later."""
    if payer_lock and not provider.reports_payer_document:
        raise Unprocessable(
            "expected_payer_tax_id cannot be checked in this mode: the Pix provider does not "
            "report the payer's document, so every payment would wait for manual review. "
            "Create the charge without it.",
            code="unprocessable_entity",
            param="expected_payer_tax_id",
        )


def _due_expires_in(terms: DueTerms | None, now: datetime) -> int | None:
    """A charge with a due date is payable until its last payable day ends in São Paulo."""
    if terms is None:
        return None
    return math.ceil((due.payable_until(terms) - now).total_seconds())


def pix_request(transaction: Transaction, merchant: Merchant) -> PixChargeRequest:
    """What the provider needs to issue the transaction's Pix code."""
    return PixChargeRequest(
        reference=transaction.id,
        amount=transaction.amount,
        expires_in=transaction.expires_in,
        merchant_name=merchant.name,
        merchant_city=merchant.city,
        payer_name=transaction.customer_name,
        payer_document=transaction.payer_document,
        description=transaction.metadata_.get("description"),
        due=due.from_json(transaction.due_terms) if transaction.due_terms else None,
    )


def apply_pix(transaction: Transaction, pix: PixCharge) -> None:
    """Keep the provider's Pix code on the transaction (its txid is the provider reference)."""
    transaction.pix_txid = pix.txid
    transaction.pix_br_code = pix.br_code
    transaction.pix_location_id = pix.location_id
    transaction.pix_expires_at = pix.expires_at
    transaction.provider_references = {**transaction.provider_references, PIX: pix.txid}


def get_charge(account_id: str, mode: KeyMode, charge_id: str) -> Transaction:
    """A charge by `ch_` id or raw id, in the caller's account and mode; expired on read.
    The read is one statement outside a transaction; expiring one found overdue locks it in
    a transaction of its own."""
    with outside_transaction():
        charge = lifecycle.find(account_id, mode, raw_id(charge_id))
    return charge_expiry.expire_if_due(charge)


def read_charge(account_id: str, mode: KeyMode, charge_id: str) -> Transaction:
    """`get_charge` for an answer only (`GET /v1/charges/<id>`): a detached copy read straight
    on the pool, or the expired charge, locked, when it was found overdue."""
    charge = lifecycle.find(account_id, mode, raw_id(charge_id), answer_only=True)
    return charge_expiry.expire_if_due(charge)


def payment_day(charge: Transaction, intended: date | None) -> date:
    """The São Paulo day a payer's bank asks a charge's amount for (the standard's `DPP`),
    today when it does not say: 400 for a past day, or one after a due date's last payable
    day (an immediate charge's amount is the same on any day)."""
    today = sao_paulo_day(utcnow())
    if intended is None:
        return today
    if intended < today:
        raise InvalidRequest("DPP is a day from today on.", param="DPP")
    if charge.due_terms is not None:
        terms = due.from_json(charge.due_terms)
        if not due.payable_on(terms, intended):
            last = due.last_payable_day(terms)
            raise InvalidRequest(
                f"DPP is after the last day this charge can be paid ({last.isoformat()}).",
                param="DPP",
            )
    return intended


def find_by_location(location_id: str) -> Transaction | None:
    charge = db.session.scalar(
        sa.select(Transaction).where(Transaction.pix_location_id == location_id)
    )
    return charge_expiry.expire_if_due(charge) if charge else None


def find_for_checkout(charge_id: str) -> Transaction | None:
    """The charge behind a public checkout address (any account: the raw id is the secret)."""
    charge = db.session.get(Transaction, charge_id)
    return charge_expiry.expire_if_due(charge) if charge else None


def list_charges(account_id: str, mode: KeyMode, query: ChargeQuery) -> ChargePage:
    """Newest first, ties broken by id, so a cursor never skips or repeats a charge."""
    conditions = [Transaction.account_id == account_id, Transaction.mode == mode]
    if query.starting_after:
        cursor = _cursor_charge(account_id, mode, query.starting_after)
        conditions.append(
            sa.tuple_(Transaction.created_at, Transaction.id)
            < sa.tuple_(sa.literal(cursor.created_at, Transaction.created_at.type), cursor.id)
        )
    if query.status:
        conditions.append(charge_expiry.status_condition(statuses_for(query.status), utcnow()))
    if query.created_after:
        conditions.append(Transaction.created_at >= query.created_after)
    if query.created_before:
        conditions.append(Transaction.created_at <= query.created_before)
    if query.customer_id:
        conditions.append(Transaction.payer_document == _payer_filter(query.customer_id))
    rows = db.session.scalars(
        sa.select(Transaction)
        .where(*conditions)
        .order_by(Transaction.created_at.desc(), Transaction.id.desc())
        .limit(query.limit + 1)
    ).all()
    page = charge_expiry.expire_listed(rows[: query.limit], utcnow())
    return ChargePage(data=page, has_more=len(rows) > query.limit)


def payability(charge: Transaction) -> Allowance:
    """May the payer still pay it? Only once its instructions are issued and until it is
    paid, expired, cancelled or refused: the QR code and copy-and-paste code are shown
    exactly while this allows. Every read expires an overdue charge first."""
    if charge.status is TransactionStatus.WAITING_PAYMENT:
        return ALLOWED
    return refused(
        Conflict(
            translatable("A %(status)s transaction cannot be paid."),
            values={"status": charge.status},
            code="transaction_not_payable",
        )
    )


def _cursor_charge(account_id: str, mode: KeyMode, cursor: str) -> Transaction:
    if not cursor.startswith(CHARGE_ID_PREFIX):
        raise InvalidRequest("starting_after takes a charge id (ch_…).", param="starting_after")
    charge = db.session.scalar(
        sa.select(Transaction).where(
            Transaction.id == raw_id(cursor),
            Transaction.account_id == account_id,
            Transaction.mode == mode,
        )
    )
    if charge is None:
        raise InvalidRequest(
            "starting_after is not a charge of this account.", param="starting_after"
        )
    return charge


def _payer_filter(customer_id: str) -> str:
    return customers.tax_id(customer_id, "customer_id")


def _validated(new: NewCharge, now: datetime) -> dict:
    """The columns of a new charge, or 400 naming the first field that breaks a rule."""
    if new.payment_method.lower() != "pix":
        raise InvalidRequest("Charges accept only payment_method pix.", param="payment_method")
    if new.amount <= 0:
        raise InvalidRequest(
            "amount is a positive integer in centavos.", code="invalid_amount", param="amount"
        )
    if new.amount > MAX_AMOUNT:
        raise InvalidRequest(
            translatable("amount is at most %(max)s."),
            values={"max": Amount(MAX_AMOUNT, PIX_CURRENCY)},
            code="invalid_amount",
            param="amount",
        )
    if new.currency.upper() != PIX_CURRENCY:
        raise InvalidRequest("Pix charges are in BRL.", param="currency")
    if new.description is not None and len(new.description) > MAX_DESCRIPTION:
        raise InvalidRequest(
            translatable("description is at most %(max)s characters."),
            values={"max": MAX_DESCRIPTION},
            param="description",
        )
    customer = new.customer
    document = customers.tax_id(customer.document, "customer.document")
    lock = customers.tax_id(new.expected_payer_tax_id, "expected_payer_tax_id")
    if lock is not None:
        if not (customer.name or "").strip():
            raise InvalidRequest(
                "customer.name is required when expected_payer_tax_id is set.",
                param="customer.name",
            )
        if document is not None and document != lock:
            raise InvalidRequest(
                "expected_payer_tax_id must equal customer.document when both are sent.",
                param="expected_payer_tax_id",
            )
    if new.due is not None:
        _check_due(new, document, now)
    return {
        "amount": new.amount,
        "currency": PIX_CURRENCY,
        "expires_in": _expires_in(new.expires_in),
        **_due_columns(new),
        "customer_name": (customer.name or "").strip() or None,
        "customer_document": document,
        "customer_email": customers.email(customer.email, "customer.email"),
        "customer_phone": customers.phone(customer.phone, "customer.phone"),
        "expected_payer_tax_id": lock,
        "payer_document": lock or document,
        "metadata_": clean_metadata(new.metadata, new.description),
    }


def _check_due(new: NewCharge, document: str | None, now: datetime) -> None:
    """The standard asks a charge with a due date for its payer's name and document, and
    every rule between the terms' values holds (`due.problems`)."""
    if new.expires_in is not None:
        raise InvalidRequest(
            translatable(
                "A charge with a due date takes no expiry: it can be paid until the days "
                "valid after its due date have passed."
            ),
            param="expires_in",
        )
    if not (new.customer.name or "").strip():
        raise InvalidRequest(
            translatable("A charge with a due date needs the customer's name."),
            param="customer.name",
        )
    if document is None:
        raise InvalidRequest(
            translatable("A charge with a due date needs the customer's CPF or CNPJ."),
            param="customer.document",
        )
    problems = due.problems(new.amount, new.due, sao_paulo_day(now))
    if problems:
        first = problems[0]
        raise InvalidRequest(first.message, values=first.values, param=first.param)


def _due_columns(new: NewCharge) -> dict:
    if new.due is None:
        return {}
    return {
        "due_date": new.due.date,
        "due_terms": due.to_json(new.due),
        "due_original_amount": new.amount,
    }


def _expires_in(expires_in: int | None) -> int | None:
    if expires_in is None:
        return None
    if expires_in < MIN_EXPIRES_IN:
        raise InvalidRequest(
            f"expires_in is at least {MIN_EXPIRES_IN} seconds.", param="expires_in"
        )
    return min(expires_in, MAX_EXPIRES_IN)


def clean_metadata(metadata: dict, description: str | None = None) -> dict:
    """The merchant's metadata without reserved or `_`-prefixed keys, description folded in."""
    kept = {
        key: value
        for key, value in metadata.items()
        if key not in RESERVED_METADATA_KEYS and not key.startswith("_")
    }
    if len(kept) > MAX_METADATA_KEYS:
        raise InvalidRequest(f"metadata holds at most {MAX_METADATA_KEYS} keys.", param="metadata")
    if any(len(key) > MAX_METADATA_KEY_LENGTH for key in kept):
        raise InvalidRequest(
            f"metadata keys are at most {MAX_METADATA_KEY_LENGTH} characters.", param="metadata"
        )
    if len(json.dumps(kept, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
        raise InvalidRequest(
            f"metadata is at most {MAX_METADATA_BYTES} bytes as JSON.", param="metadata"
        )
    if description is not None:
        kept["description"] = description
    return kept
