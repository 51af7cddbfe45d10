"""The wallets page: balances per currency, and one currency's statement with its running
balance, on screen a page at a time or as a CSV download.

Balances come from `services.wallets` (what `GET /v1/wallets/balance` answers) and the
statement from `services.statements`, so the page never disagrees with the API or the ledger.
Any active member may read them; nothing here moves money.
"""

import re

from flask import g, render_template, request
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.charges import MODES
from app.dashboard.exports import csv_response, spreadsheet_cell, utc_text
from app.dashboard.session import member_required
from app.errors import InvalidRequest
from app.models.base import MAX_PAGE_OR_OFFSET
from app.services import (
    dispute_holds,
    disputes,
    payouts,
    refunds,
    releases,
    settlement,
    statements,
    wallets,
)
from app.services.statements import StatementRow

CURRENCY = re.compile(r"[A-Z]{3,8}")
KIND_LABELS = {
    settlement.SETTLEMENT: "Payment received",
    releases.RELEASE: "Released to available",
    payouts.DEBIT: "Payout",
    payouts.REFUND: "Payout refunded",
    refunds.DEBIT: "Refund",
    refunds.REVERSAL: "Refund failed, returned",
    disputes.HOLD: "Dispute: amount held",
    disputes.RELEASE: "Dispute won: hold released",
    disputes.LOSS: "Dispute lost: hold sent to the payer",
    dispute_holds.REFUND_RELEASE: "Dispute: hold reduced by a completed refund",
}
CSV_COLUMNS = (
    "created_at",
    "kind",
    "description",
    "available_change",
    "pending_change",
    "available_balance",
)
# A spreadsheet runs a cell starting with these as a formula.


@bp.get("/wallets")
@member_required
def wallets_page() -> ResponseReturnValue:
    """Balances of the mode's wallets, then one currency's statement, newest first."""
    mode, currency, page = mode_arg(), _currency(), page_arg()
    return render_template(
        "dashboard/wallets.html",
        mode=mode,
        currency=currency,
        balances=wallets.balances(g.account_id, MODES[mode]),
        statement=statements.statement(g.account_id, MODES[mode], currency, page),
        kind_labels=KIND_LABELS,
    )


@bp.get("/wallets/statement.csv")
@member_required
def wallet_statement_csv() -> ResponseReturnValue:
    """The whole statement of one currency, streamed as it is read (amounts in minor units)."""
    mode, currency = mode_arg(), _currency()
    rows = statements.statement_rows(g.account_id, MODES[mode], currency)
    return csv_response(CSV_COLUMNS, map(_csv_values, rows), f"statement-{currency}-{mode}.csv")


def mode_arg() -> str:
    """`mode` from the query string, test unless asked (as on the charges page). The layout
    shows it in the top bar and keeps it in the navigation's links."""
    mode = request.args.get("mode") or "test"
    if mode not in MODES:
        raise InvalidRequest("mode is test or live.", param="mode")
    g.dashboard_mode = mode
    return mode


def page_arg() -> int:
    """`page` from the query string: 1 unless asked."""
    text = request.args.get("page") or "1"
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(MAX_PAGE_OR_OFFSET))
    if not (digits and 1 <= int(text) <= MAX_PAGE_OR_OFFSET):
        raise InvalidRequest(f"page is a number from 1 to {MAX_PAGE_OR_OFFSET}.", param="page")
    return int(text)


def _currency() -> str:
    currency = (request.args.get("currency") or wallets.PRIMARY_CURRENCY).upper()
    if not CURRENCY.fullmatch(currency):
        raise InvalidRequest("currency is a currency code, like BRL.", param="currency")
    return currency


def _csv_values(row: StatementRow) -> tuple:
    return (
        utc_text(row.created_at),
        spreadsheet_cell(row.kind),
        spreadsheet_cell(row.description),
        row.available_change,
        row.pending_change,
        row.available_balance,
    )
