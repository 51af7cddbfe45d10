"""The wallets page: balances per currency, and one currency's statement with its running
balance, gross, fee and net, for a period of the account's days with its opening and closing
balances, on screen a page at a time or as a CSV download.

Balances come from `services.wallets` (what `GET /v1/wallets/balance` answers) and the
statement from `services.statements`, so the page never disagrees with the API or the ledger.
Any active member may read them; nothing here moves money.
"""

from datetime import date

from flask import g, render_template, request
from flask.typing import ResponseReturnValue
from flask_babel import lazy_gettext as _l

from app.dashboard import bp
from app.dashboard.exports import EXPORT_CHUNK, Money, csv_response
from app.dashboard.params import MODES, date_range_args, day_bounds, mode_arg, page_arg
from app.dashboard.session import member_required
from app.errors import InvalidRequest
from app.models.constants import WALLET_CURRENCY_CODE
from app.services import dispute_holds, releases, statements, wallets
from app.services.disputes import cases as dispute_cases
from app.services.payouts import decisions as payout_decisions
from app.services.payouts import processing as payout_processing
from app.services.statements import Period, StatementRow
from app.services.transactions import refund_funding, settlement

KIND_LABELS = {
    settlement.SETTLEMENT: _l("Payment received"),
    releases.RELEASE: _l("Released to available"),
    payout_decisions.DEBIT: _l("Payout"),
    payout_processing.REFUND: _l("Payout refunded"),
    refund_funding.DEBIT: _l("Refund"),
    refund_funding.REVERSAL: _l("Refund failed, returned"),
    dispute_cases.HOLD: _l("Dispute: amount held"),
    dispute_cases.RELEASE: _l("Dispute won: hold released"),
    dispute_cases.LOSS: _l("Dispute lost: hold sent to the payer"),
    dispute_holds.REFUND_RELEASE: _l("Dispute: hold reduced by a completed refund"),
}
CSV_COLUMNS = (
    "created_at",
    "kind",
    "description",
    "available_change",
    "pending_change",
    "available_balance",
    "gross",
    "fee",
    "net",
)


@bp.get("/wallets")
@member_required
def wallets_page() -> ResponseReturnValue:
    """Balances of the mode's wallets, then one currency's statement, newest first."""
    mode, currency, page = mode_arg(), _currency(), page_arg()
    first_day, last_day = date_range_args("since", "until")
    return render_template(
        "dashboard/wallets.html",
        mode=mode,
        currency=currency,
        since=first_day,
        until=last_day,
        since_day=first_day and date.fromisoformat(first_day),
        until_day=last_day and date.fromisoformat(last_day),
        balances=wallets.balances(g.account_id, MODES[mode]),
        statement=statements.statement(
            g.account_id, MODES[mode], currency, page, period=_period(first_day, last_day)
        ),
        kind_labels=KIND_LABELS,
    )


@bp.get("/wallets/statement.csv")
@member_required
def wallet_statement_csv() -> ResponseReturnValue:
    """The statement of one currency for the period asked (the whole of it by default),
    streamed as it is read (amounts in minor units)."""
    mode, currency = mode_arg(), _currency()
    period = _period(*date_range_args("since", "until"))
    rows = statements.statement_rows(g.account_id, MODES[mode], currency, EXPORT_CHUNK, period)
    values = (_csv_values(row, currency) for row in rows)
    filename = f"statement-{currency}-{mode}.csv"
    return csv_response(CSV_COLUMNS, values, filename)


def _currency() -> str:
    currency = (request.args.get("currency") or wallets.PRIMARY_CURRENCY).upper()
    if not WALLET_CURRENCY_CODE.fullmatch(currency):
        raise InvalidRequest("currency is a currency code, like BRL.", param="currency")
    return currency


def _period(first_day: str | None, last_day: str | None) -> Period:
    return Period(*day_bounds(first_day, last_day))


def _csv_values(row: StatementRow, currency: str) -> tuple:
    return (
        row.created_at,
        row.kind,
        row.description,
        *(
            Money(amount, currency)
            for amount in (
                row.available_change,
                row.pending_change,
                row.available_balance,
                row.gross,
                row.fee,
                row.net,
            )
        ),
    )
