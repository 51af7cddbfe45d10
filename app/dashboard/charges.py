"""The old charges pages, grown into the payments pages (`app.dashboard.payments`).

`/dashboard/charges` and `/dashboard/charges/<id>` redirect there with equivalent filters, so
bookmarks and shared links keep working; the test Pix charge form still posts to
`/dashboard/charges` (see `payments.create_test_charge`).
"""

from flask import g, redirect, request, url_for
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.params import MODES, choice_arg, limit_arg, mode_arg
from app.dashboard.session import member_required
from app.errors import InvalidRequest, NotFound
from app.extensions import db
from app.formats.charges import PUBLIC_STATUSES
from app.models import KeyMode, TransactionStatus
from app.services.transactions import payment_listing, payments
from app.services.transactions.payment_listing import DEFAULT_PAGE_LIMIT, PaymentQuery

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
    mode, status, limit = mode_arg(), _status(), limit_arg(default=None)
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
    return redirect(url_for("dashboard.payment_page", payment_id=charge_id, mode=mode_arg()), 301)


def _page_after(mode: KeyMode, status: TransactionStatus | None, cursor: str, limit: int) -> int:
    """The page of the newest-first list holding the first transaction older than `cursor`:
    counted through the service (how many match in all, how many up to the cursor)."""
    try:
        charge = payments.get_payment(g.account_id, mode, cursor)
    except NotFound:
        raise InvalidRequest(
            "starting_after is not a charge of this account and mode.", param="starting_after"
        ) from None
    _, matching = payment_listing.list_payments(
        g.account_id, mode, PaymentQuery(status=status, limit=1)
    )
    _, up_to_cursor = payment_listing.list_payments(
        g.account_id, mode, PaymentQuery(status=status, end=charge.created_at, limit=1)
    )
    db.session.commit()  # transactions found expired on read
    cursor_listed = status is None or charge.status is status
    newer = matching - up_to_cursor + (1 if cursor_listed else 0)
    return newer // limit + 1


def _status() -> TransactionStatus | None:
    status = choice_arg("status", PUBLIC_STATUSES)
    return STATUS_FOR_PUBLIC[status] if status else None
