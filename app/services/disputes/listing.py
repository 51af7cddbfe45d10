"""Finding an account's dispute cases: one by id, a page of them (newest first, with a keyset
cursor), the open ones by deadline, and the public `med_case` with its evidence count."""

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime

import sqlalchemy as sa

from app.errors import InvalidRequest
from app.extensions import db
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.disputes import med_case_object
from app.marks import translatable
from app.models import DisputeCase, DisputeEvidence, DisputeStatus, DisputeType, KeyMode
from app.models.dispute import DISPUTE_SEARCH_TEXT
from app.services import search, tenancy

CASE_PREFIX = "med_"
DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT = 25, 100


@dataclass(frozen=True)
class CaseQuery:
    limit: int = DEFAULT_LIST_LIMIT
    starting_after: str | None = None
    status: str | None = None
    type: str | None = None
    charge_id: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    search: str | None = None  # the dashboard's search box (`services.search`)


@dataclass(frozen=True)
class CasePage:
    data: list[DisputeCase]
    has_more: bool

    @property
    def next_cursor(self) -> str | None:
        return self.data[-1].id if self.has_more and self.data else None


def get_case(account_id: str, mode: KeyMode, case_id: str) -> DisputeCase:
    """A case of the caller's account and mode; anything else is 404."""
    return tenancy.owned(
        DisputeCase,
        case_id,
        translatable("No such dispute case."),
        account_id=account_id,
        mode=mode,
    )


def list_cases(account_id: str, mode: KeyMode, query: CaseQuery) -> CasePage:
    """Newest first, ties broken by id, so a cursor never skips or repeats a case."""
    conditions = [DisputeCase.account_id == account_id, DisputeCase.mode == mode]
    if query.starting_after is not None:
        cursor = _cursor_case(account_id, mode, query.starting_after)
        conditions.append(
            sa.tuple_(DisputeCase.created_at, DisputeCase.id)
            < sa.tuple_(sa.literal(cursor.created_at, DisputeCase.created_at.type), cursor.id)
        )
    if query.status is not None:
        conditions.append(DisputeCase.status == DisputeStatus(query.status))
    if query.type is not None:
        conditions.append(DisputeCase.type == DisputeType(query.type))
    if query.charge_id is not None:
        conditions.append(DisputeCase.transaction_id == _charge_filter(query.charge_id))
    if query.created_after is not None:
        conditions.append(DisputeCase.created_at > query.created_after)
    if query.created_before is not None:
        conditions.append(DisputeCase.created_at < query.created_before)
    if query.search is not None:
        conditions.append(search.matching(query.search, DISPUTE_SEARCH_TEXT))
    rows = db.session.scalars(
        sa.select(DisputeCase)
        .where(*conditions)
        .order_by(DisputeCase.created_at.desc(), DisputeCase.id.desc())
        .limit(query.limit + 1)
    ).all()
    return CasePage(data=list(rows[: query.limit]), has_more=len(rows) > query.limit)


def case_rows(
    account_id: str, mode: KeyMode, query: CaseQuery, chunk_size: int
) -> Iterator[tuple[DisputeCase, int]]:
    """Every case `list_cases` finds for `query`, on any page, each with its confirmed
    evidence count, for an export: `chunk_size` cases per query, following the cursor back
    from the newest, so cases opened meanwhile never shift the pages; read-only."""
    query = replace(query, limit=chunk_size, starting_after=None)
    while True:
        page = list_cases(account_id, mode, query)
        counts = evidence_counts([case.id for case in page.data])
        yield from ((case, counts[case.id]) for case in page.data)
        if not page.has_more:
            return
        query = replace(query, starting_after=page.next_cursor)


def _cursor_case(account_id: str, mode: KeyMode, cursor: str) -> DisputeCase:
    if not cursor.startswith(CASE_PREFIX):
        raise InvalidRequest("starting_after takes a case id (med_…).", param="starting_after")
    case = db.session.scalar(
        sa.select(DisputeCase).where(
            DisputeCase.id == cursor,
            DisputeCase.account_id == account_id,
            DisputeCase.mode == mode,
        )
    )
    if case is None:
        raise InvalidRequest(
            "starting_after is not a case of this account.", param="starting_after"
        )
    return case


def _charge_filter(charge_id: str) -> str:
    raw = charge_id.removeprefix(CHARGE_ID_PREFIX)
    if not charge_id.startswith(CHARGE_ID_PREFIX) or not raw:
        raise InvalidRequest("charge_id takes a charge id (ch_…).", param="charge_id")
    return raw


def evidence_counts(case_ids: list[str]) -> dict[str, int]:
    """Confirmed evidence per case, in one query (a list page counts all its cases at once)."""
    if not case_ids:
        return {}
    rows = db.session.execute(
        sa.select(DisputeEvidence.case_id, sa.func.count())
        .where(DisputeEvidence.case_id.in_(case_ids), DisputeEvidence.uploaded_at.is_not(None))
        .group_by(DisputeEvidence.case_id)
    )
    counts = dict.fromkeys(case_ids, 0)
    counts.update({case_id: int(count) for case_id, count in rows})
    return counts


def case_object(case: DisputeCase) -> dict:
    """The public `med_case` of one case (with its evidence count)."""
    return med_case_object(case, evidence_counts([case.id])[case.id])


def open_cases_by_deadline(account_id: str, mode: KeyMode) -> list[DisputeCase]:
    """Open and appealed cases, the most urgent deadline first (the dashboard's notice)."""
    return list(
        db.session.scalars(
            sa.select(DisputeCase)
            .where(
                DisputeCase.account_id == account_id,
                DisputeCase.mode == mode,
                DisputeCase.status.in_((DisputeStatus.OPEN, DisputeStatus.APPEALED)),
            )
            .order_by(DisputeCase.response_deadline.is_(None), DisputeCase.response_deadline)
        )
    )
