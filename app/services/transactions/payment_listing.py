"""Listing payments: one page of `GET /v1/payments` or the dashboard's list, and every row of
a CSV export. Filters by status (as a reader sees it), offered method, creation time, due
date (charges that have one) and the dashboard's search box (`services.search`); sorts by
any top-level field of the payment object, empty values last.
"""

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from app.extensions import db
from app.models import KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.models.transaction import TRANSACTION_SEARCH_TEXT
from app.services import search
from app.services.paging import paged
from app.services.transactions import charge_expiry

S = TransactionStatus
DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 100
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
    search: str | None = None  # the dashboard's search box (`services.search`)
    due_from: date | None = None  # charges with a due date on these days, both inclusive
    due_until: date | None = None


@dataclass(frozen=True)
class Totals:
    """What a filtered list adds up to in one currency: how many transactions it lists, and
    of those received (`paid_at` set, later refunds or disputes included: those are wallet
    movements of their own), the gross, the fees and the net."""

    currency: str
    count: int
    received: int
    gross: int
    fees: int

    @property
    def net(self) -> int:
        return self.gross - self.fees


@dataclass(frozen=True)
class ListedPayment:
    """A transaction with the status a reader sees (`_shown_status`), read without writing."""

    payment: Transaction
    status: str


def list_payments(
    account_id: str, mode: KeyMode, query: PaymentQuery
) -> tuple[list[Transaction], int]:
    """One page of the account's transactions and how many match in all."""
    now = utcnow()
    found = paged(_listing(account_id, mode, query, now), query.page, query.limit)
    return charge_expiry.expire_listed(found.rows, now), found.total


def totals(account_id: str, mode: KeyMode, query: PaymentQuery) -> list[Totals]:
    """The sums of every transaction `list_payments` finds for `query` (on any page), per
    currency, in one grouped query."""
    received = Transaction.paid_at.is_not(None)
    fees = sa.func.coalesce(Transaction.provider_fee, 0) + sa.func.coalesce(
        Transaction.platform_fee, 0
    )
    summed = (
        _listing(account_id, mode, query, utcnow())
        .order_by(None)
        .with_only_columns(
            Transaction.currency,
            sa.func.count(),
            sa.func.count(Transaction.paid_at),
            sa.func.coalesce(sa.func.sum(sa.case((received, Transaction.amount), else_=0)), 0),
            sa.func.coalesce(sa.func.sum(sa.case((received, fees), else_=0)), 0),
            maintain_column_froms=True,
        )
        .group_by(Transaction.currency)
        .order_by(Transaction.currency)
    )
    return [Totals(*row) for row in db.session.execute(summed)]


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
        conditions.append(charge_expiry.status_condition({query.status}, now))
    if query.method is not None:
        conditions.append(offers(query.method))
    if query.start is not None:
        conditions.append(Transaction.created_at >= query.start)
    if query.end is not None:
        conditions.append(Transaction.created_at <= query.end)
    if query.search is not None:
        conditions.append(search.matching(query.search, TRANSACTION_SEARCH_TEXT))
    if query.due_from is not None:
        conditions.append(Transaction.due_date >= query.due_from)
    if query.due_until is not None:
        conditions.append(Transaction.due_date <= query.due_until)
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
    before the expiry sweep stores it (as `charge_expiry.status_condition` filters)."""
    return sa.case(
        (charge_expiry.overdue_condition(now), sa.literal(S.EXPIRED.value)),
        else_=sa.cast(Transaction.status, sa.String),
    )
