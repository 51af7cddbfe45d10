"""Finding payouts: one of an account by id, a page of them (newest first), every row of the
same listing for an export, and the PENDING ones of every account for the back office."""

from collections.abc import Iterator

import sqlalchemy as sa

from app.extensions import db
from app.marks import translatable
from app.models import KeyMode, Payout, PayoutStatus
from app.models.payout import PAYOUT_SEARCH_TEXT
from app.services import search, tenancy
from app.services.paging import paged

LISTING_ORDER = (Payout.created_at.desc(), Payout.id.desc())  # newest first


def get(account_id: str, payout_id: str) -> Payout:
    return tenancy.owned(
        Payout, payout_id, translatable("No such withdrawal."), account_id=account_id
    )


def list_payouts(
    account_id: str,
    mode: KeyMode | None,
    status: str | None,
    page: int,
    limit: int,
    search_for: str | None = None,
) -> tuple[list[Payout], int]:
    """One page (newest first) and the total matching; `mode=None` lists both modes;
    `search_for` is the dashboard's search box (`services.search`)."""
    listing = sa.select(Payout).where(*_listing_conditions(account_id, mode, status, search_for))
    found = paged(listing.order_by(*LISTING_ORDER), page, limit)
    return found.rows, found.total


def payout_rows(
    account_id: str,
    mode: KeyMode | None,
    status: str | None,
    chunk_size: int,
    search_for: str | None = None,
) -> Iterator[Payout]:
    """Every payout `list_payouts` pages through, in its order, for an export: one query read
    `chunk_size` rows at a time (`yield_per`), so a long history never sits in memory."""
    yield from db.session.scalars(
        sa.select(Payout)
        .where(*_listing_conditions(account_id, mode, status, search_for))
        .order_by(*LISTING_ORDER)
        .execution_options(yield_per=chunk_size)
    )


def pending_review(limit: int = 100) -> list[Payout]:
    """PENDING payouts of every account, oldest first: the back-office approval queue."""
    return list(
        db.session.scalars(
            sa.select(Payout)
            .where(Payout.status == PayoutStatus.PENDING)
            .order_by(Payout.created_at, Payout.id)
            .limit(limit)
        )
    )


def _listing_conditions(
    account_id: str, mode: KeyMode | None, status: str | None, search_for: str | None
) -> list:
    conditions = [Payout.account_id == account_id]
    if mode is not None:
        conditions.append(Payout.mode == mode)
    if status is not None:
        conditions.append(Payout.status == PayoutStatus(status))
    if search_for is not None:
        conditions.append(search.matching(search_for, PAYOUT_SEARCH_TEXT))
    return conditions
