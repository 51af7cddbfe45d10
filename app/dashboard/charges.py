"""The old charges pages, grown into the payments pages (`app.dashboard.payments`).

`/dashboard/charges` and `/dashboard/charges/<id>` redirect there with equivalent filters, so
bookmarks and shared links keep working; the test Pix charge form still posts to
`/dashboard/charges` (see `payments.create_test_charge`). `MODES` is the dashboard's mode
switch, shared by every page.
"""

from flask import g, redirect, request, url_for
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.session import member_required
from app.errors import InvalidRequest, NotFound
from app.extensions import db
from app.formats.charges import PUBLIC_STATUSES
from app.models import KeyMode, TransactionStatus
from app.services import payments
from app.services.charges import MAX_LIST_LIMIT
from app.services.payments import DEFAULT_PAGE_LIMIT, PaymentQuery

MODES = {"test": KeyMode.TEST, "live": KeyMode.LIVE}
S = TransactionStatus
# A public charge status → the transaction status the payments list filters by. The list
# takes one status, so `pending` leaves out PENDING (a payment's first seconds, before the
# provider finalises it), `paid` APPROVED and `disputed` CHARGEBACK (both card statuses).
STATUS_FOR_PUBLIC = {
    "pending": S.WAITING_PAYMENT,
    "processing": S.PROCESSING,
    "paid": S.PAID,
    "failed": S.REFUSED,
    "cancelled": S.CANCELLED,
    "expired": S.EXPIRED,
    "refunded": S.REFUNDED,
    "disputed": S.DISPUTE,
}


@bp.get("/charges")
@member_required
def charges_page() -> ResponseReturnValue:
    """→ the payments list: same mode, status and page size; a `starting_after` cursor
    becomes the page holding the charge that came after it."""
    mode, status, limit = _mode_name(), _status(), _limit()
    args: dict = {"mode": mode}
    if status is not None:
        args["status"] = status.value
    if limit is not None:
        args["limit"] = limit
    cursor = request.args.get("starting_after") or None
    if cursor is not None:
        page = _page_after(MODES[mode], status, cursor, limit or DEFAULT_PAGE_LIMIT)
        if page > 1:
            args["page"] = page
    return redirect(url_for("dashboard.payments_page", **args), 301)


@bp.get("/charges/<charge_id>")
@member_required
def charge_page(charge_id: str) -> ResponseReturnValue:
    """→ the payment page of the same transaction (it takes `ch_` ids too)."""
    return redirect(url_for("dashboard.payment_page", payment_id=charge_id, mode=_mode_name()), 301)


def _page_after(mode: KeyMode, status: TransactionStatus | None, cursor: str, limit: int) -> int:
    """The page of the newest-first list holding the first transaction older than `cursor`:
    counted through the service (how many match in all, how many up to the cursor)."""
    try:
        charge = payments.get_payment(g.account_id, mode, cursor)
    except NotFound:
        raise InvalidRequest(
            "starting_after is not a charge of this account and mode.", param="starting_after"
        ) from None
    _, matching = payments.list_payments(g.account_id, mode, PaymentQuery(status=status, limit=1))
    _, up_to_cursor = payments.list_payments(
        g.account_id, mode, PaymentQuery(status=status, end=charge.created_at, limit=1)
    )
    db.session.commit()  # transactions found expired on read
    cursor_listed = status is None or charge.status is status
    newer = matching - up_to_cursor + (1 if cursor_listed else 0)
    return newer // limit + 1


def _mode_name() -> str:
    mode = request.args.get("mode") or "test"
    if mode not in MODES:
        raise InvalidRequest("mode is test or live.", param="mode")
    return mode


def _status() -> TransactionStatus | None:
    status = request.args.get("status") or None
    if status is not None and status not in PUBLIC_STATUSES:
        raise InvalidRequest(
            "status is one of: " + ", ".join(PUBLIC_STATUSES) + ".", param="status"
        )
    return STATUS_FOR_PUBLIC[status] if status else None


def _limit() -> int | None:
    text = request.args.get("limit") or None
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIST_LIMIT:
        raise InvalidRequest(f"limit is a number from 1 to {MAX_LIST_LIMIT}.", param="limit")
    return int(text)
