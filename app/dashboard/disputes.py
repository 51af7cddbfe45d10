"""Disputes in the dashboard: the account's cases with their filters, deadlines and CSV
export, and how a case's status and deadline read on every page that shows cases (the
`dispute_badge` and `time_left` filters). One case, its answers and its evidence are in
`dispute_detail`.

Reads go through `services/disputes/listing`, the functions behind `GET /v1/med/cases`, so
the list shows what the API answers.
"""

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import starmap

from flask import g, render_template, request
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import ngettext

from app.dashboard import bp
from app.dashboard.exports import EXPORT_CHUNK, Money, csv_response, spreadsheet_cell
from app.dashboard.params import (
    MODES,
    DayRange,
    QueryFilters,
    choice_arg,
    date_range_args,
    day_bounds,
    day_range_arg,
    mode_arg,
    search_arg,
)
from app.dashboard.session import member_required
from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.labels import DISPUTE_STATUS_LABELS, DISPUTE_TYPE_LABELS
from app.models import DisputeCase, DisputeStatus, DisputeType
from app.models.base import utcnow
from app.services.disputes import listing
from app.services.disputes.listing import CaseQuery

STATUSES = tuple(status.value for status in DisputeStatus)
TYPES = tuple(kind.value for kind in DisputeType)
PAGE_SIZE = 25
CSV_COLUMNS = (
    "id",
    "created_at",
    "status",
    "type",
    "amount",
    "currency",
    "charge_id",
    "reason",
    "response_deadline",
    "evidence_count",
    "appealed_at",
    "money_outcome",
    "closed_at",
)
# The existing badge colours: waiting on someone is amber, a loss red, the rest neutral.
STATUS_BADGES = {
    DisputeStatus.OPEN: "status-pending",
    DisputeStatus.APPEALED: "status-processing",
    DisputeStatus.ACCEPTED: "status-failed",
    DisputeStatus.REJECTED: "status-rejected",
    DisputeStatus.CLOSED: "status-cancelled",
}


@dataclass(frozen=True)
class DisputeFilters(QueryFilters):
    """The list's query string: every link (mode, next page, the CSV export) keeps the others.
    `created_from` and `created_to` are calendar days in the account's zone, both inclusive."""

    mode: str = "test"
    status: str | None = None
    type: str | None = None
    charge_id: str | None = None
    created_from: str | None = None
    created_to: str | None = None
    q: str | None = None
    starting_after: str | None = None

    @property
    def filtered(self) -> bool:
        return bool(
            self.status
            or self.type
            or self.charge_id
            or self.created_from
            or self.created_to
            or self.q
        )

    def query(self, **changes) -> CaseQuery:
        """The service's query for these filters (newest first), with `changes` applied."""
        start, stop = day_bounds(self.created_from, self.created_to)
        query = CaseQuery(
            limit=PAGE_SIZE,
            starting_after=self.starting_after,
            status=self.status,
            type=self.type,
            charge_id=self.charge_id,
            created_after=start - timedelta(microseconds=1) if start else None,  # exclusive
            created_before=stop,
            search=self.q,
        )
        return replace(query, **changes)


@bp.app_template_filter()
def time_left(deadline: datetime | None) -> str:
    """How long until a response deadline: "2 days 4 h left", "overdue", "" when unknown,
    in the reader's language (`overdue` tells whether it has passed)."""
    if deadline is None:
        return ""
    minutes = _minutes_left(deadline)
    if minutes < 0:
        return _("overdue")
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return ngettext(
            "%(num)d day %(hours)d h left", "%(num)d days %(hours)d h left", days, hours=hours
        )
    if hours:
        return _("%(hours)d h %(minutes)d min left", hours=hours, minutes=minutes)
    if minutes:
        return _("%(minutes)d min left", minutes=minutes)
    return _("less than a minute left")


@bp.app_template_test()
def overdue(deadline: datetime | None) -> bool:
    """Whether a response deadline has passed (by a whole minute, as `time_left` says)."""
    return deadline is not None and _minutes_left(deadline) < 0


def _minutes_left(deadline: datetime) -> int:
    return int((deadline - utcnow()).total_seconds() // 60)


@bp.app_template_filter()
def dispute_badge(status: DisputeStatus) -> str:
    return STATUS_BADGES[status]


@bp.get("/disputes")
@member_required
def disputes_page() -> ResponseReturnValue:
    """One page of the mode's cases, newest first, with their deadlines and evidence counts.
    Days that cannot filter are shown back beside their fields, the list unfiltered by day."""
    days = day_range_arg("created_from", "created_to")
    filters = _filters(days)
    page = listing.list_cases(g.account_id, MODES[filters.mode], filters.query())
    html = render_template(
        "dashboard/disputes.html",
        filters=filters,
        days=days,
        page=page,
        evidence_counts=listing.evidence_counts([case.id for case in page.data]),
        statuses={status: DISPUTE_STATUS_LABELS[status] for status in DisputeStatus},
        types={kind: DISPUTE_TYPE_LABELS[kind] for kind in DisputeType},
        status_labels=DISPUTE_STATUS_LABELS,
        type_labels=DISPUTE_TYPE_LABELS,
        charge_id=case_charge_id,
        csv_args=filters.args(starting_after=None),  # the export is every page
    )
    return html, 400 if days.problems else 200


@bp.get("/disputes/export.csv")
@member_required
def disputes_csv() -> ResponseReturnValue:
    """The filtered list, every page of it, streamed as it is read (amounts in minor units,
    times in UTC). The cursor walks back from the newest case, so cases opened while the
    export runs never shift the pages it reads."""
    filters = _filters(DayRange(*date_range_args("created_from", "created_to")))
    rows = listing.case_rows(g.account_id, MODES[filters.mode], filters.query(), EXPORT_CHUNK)
    return csv_response(CSV_COLUMNS, starmap(_csv_values, rows), f"disputes-{filters.mode}.csv")


def case_charge_id(case: DisputeCase) -> str:
    """The public id (ch_…) of the charge a case disputes, which its payment page takes."""
    return CHARGE_ID_PREFIX + case.transaction_id


def _csv_values(case: DisputeCase, evidence_count: int) -> tuple:
    """One case; free text goes through the wallet export's formula guard."""
    return (
        case.id,
        case.created_at,
        str(case.status),
        str(case.type),
        Money(case.amount, case.currency),
        spreadsheet_cell(case.currency),
        case_charge_id(case),
        spreadsheet_cell(case.reason or ""),
        case.response_deadline,
        evidence_count,
        case.appealed_at,
        str(case.money_outcome) if case.money_outcome else "",
        case.closed_at,
    )


def _filters(days: DayRange) -> DisputeFilters:
    return DisputeFilters(
        mode=mode_arg(),
        status=choice_arg("status", STATUSES),
        type=choice_arg("type", TYPES),
        charge_id=(request.args.get("charge_id") or "").strip() or None,
        created_from=days.first,
        created_to=days.last,
        q=search_arg(),
        starting_after=request.args.get("starting_after") or None,
    )
