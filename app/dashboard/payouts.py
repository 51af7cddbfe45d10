"""Payouts in the dashboard: the list with its filters and CSV export, the Pix payout request
form, and cancelling a request while it is still PENDING (a Cancel button exactly where
`requesting.cancellability` allows it).

Every read and write goes through `app.services.payouts` (`requesting`, `listing`), the
functions behind `/v1/withdrawals`, so the rules live in one place: a MEMBER who posts the
request form by hand is refused by the service exactly like an API call. Filters live in the
query string so a reload, a shared link or the export shows the same payouts.

The fee is added on top: approval debits amount + fee from the wallet and the recipient gets
the amount, so the list shows that debit, never the API's `netAmount` (amount - fee).
"""

import math
from dataclasses import dataclass

from flask import flash, g, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _

from app.dashboard import bp
from app.dashboard.exports import EXPORT_CHUNK, Money, csv_response, spreadsheet_cell
from app.dashboard.forms import ConfirmForm
from app.dashboard.forms.fields import to_minor_units
from app.dashboard.forms.payouts import PixPayoutForm
from app.dashboard.params import (
    MODES,
    QueryFilters,
    choice_arg,
    mode_arg,
    page_arg,
    search_arg,
    shown_mode,
)
from app.dashboard.session import current_membership, member_required
from app.dashboard.submit_once import new_form_key, show_error, submit_once
from app.errors import ApiError, Conflict
from app.extensions import db
from app.formats.labels import PAYOUT_STATUS_LABELS
from app.models import Payout, PayoutStatus, PayoutType
from app.services import fees, wallets
from app.services.allowances import manager_allowance
from app.services.payouts import listing, requesting
from app.services.payouts.requesting import NewPayout
from app.templating import money, refusal_text

PER_PAGE = 20
STATUSES = tuple(status.value for status in PayoutStatus)
# The service names fields the API's way; the form names them its own.
FORM_FIELD_FOR_PARAM = {
    "amount": "amount",
    "pixKey": "pix_key",
    "pixKeyType": "pix_key_type",
    "description": "description",
}
ADDRESS_SHOWN = 6  # characters kept at each end of a crypto address
CSV_COLUMNS = (
    "id",
    "created_at",
    "status",
    "type",
    "amount",
    "fee",
    "wallet_debit",
    "currency",
    "destination",
    "description",
    "failure_reason",
    "completed_at",
)


@dataclass(frozen=True)
class PayoutFilters(QueryFilters):
    """The list's query string, so every link (mode, status, pages) keeps the others."""

    mode: str = "test"
    status: str | None = None
    q: str | None = None
    page: int = 1


@bp.get("/payouts")
@member_required
def payouts_page() -> ResponseReturnValue:
    """One page of the mode's payouts, newest first, and the request form."""
    filters = _filters()
    return _list_page(filters, _blank_form(filters.mode))


@bp.post("/payouts")
@member_required
def request_pix_payout() -> ResponseReturnValue:
    """Request a Pix payout: PENDING until approved, nothing debited before."""
    form = PixPayoutForm()
    filters = PayoutFilters(mode=shown_mode(form.mode.data if form.mode.data in MODES else "test"))
    if not form.validate_on_submit():
        return _list_page(filters, form, 400)
    new = _new_payout(form)
    try:
        payout_id = submit_once(
            form, lambda: requesting.request_payout(current_membership(), new).id
        )
    except ApiError as error:
        show_error(form, error, FORM_FIELD_FOR_PARAM)
        return _list_page(filters, form, error.status)
    payout = listing.get(g.account_id, payout_id)
    flash(
        _(
            "Payout of %(amount)s to %(destination)s requested: %(status)s.",
            amount=money(payout.amount, payout.currency),
            destination=destination(payout),
            status=PAYOUT_STATUS_LABELS[payout.status],
        ),
        "info",
    )
    return redirect(url_for("dashboard.payouts_page", **filters.args()), 303)


@bp.get("/payouts/fee")
@member_required
def payout_fee_preview() -> ResponseReturnValue:
    """What a Pix payout of the amount being typed costs, for the request form to show before
    it is sent (`static/payout-fee.js`): the fee and what leaves the wallet, from the same
    fee rule the request applies; an amount that cannot be read says why, as the form would."""
    try:
        amount = to_minor_units(request.args.get("amount") or "")
    except ValueError as unreadable:
        return jsonify(text=str(unreadable), complete=False)
    cost = fees.payout_cost(PayoutType.PIX, amount)
    return jsonify(
        text=_(
            "Fee %(fee)s: %(debit)s leaves your wallet, %(amount)s reaches the key.",
            fee=money(cost.fee),
            debit=money(cost.debit),
            amount=money(amount),
        ),
        complete=True,
    )


@bp.get("/payouts/export.csv")
@member_required
def payouts_csv() -> ResponseReturnValue:
    """The filtered list, every page of it, streamed as it is read (amounts in minor units,
    times in UTC)."""
    filters = _filters()
    rows = listing.payout_rows(
        g.account_id, MODES[filters.mode], filters.status, EXPORT_CHUNK, filters.q
    )
    return csv_response(CSV_COLUMNS, map(_csv_values, rows), f"payouts-{filters.mode}.csv")


@bp.post("/payouts/<payout_id>/cancel")
@member_required
def cancel_payout(payout_id: str) -> ResponseReturnValue:
    """Withdraw a request while it is PENDING; the list's filters come back in the link."""
    filters = _filters()
    try:
        payout = requesting.cancel(current_membership(), payout_id)
    except Conflict as error:
        db.session.rollback()
        flash(refusal_text(error), "error")
    else:
        db.session.commit()
        flash(
            _("Payout of %(amount)s cancelled.", amount=money(payout.amount, payout.currency)),
            "info",
        )
    return redirect(url_for("dashboard.payouts_page", **filters.args()), 303)


def destination(payout: Payout, *, whole: bool = False) -> str:
    """Where a payout goes, short enough for a table cell unless `whole` (an export, whose
    words stay in English)."""
    if payout.type is PayoutType.PIX:
        return f"{payout.pix_key} ({payout.pix_key_type})"
    if payout.type is PayoutType.TED:
        bank = payout.bank_account or {}
        parts = {
            "bank": bank.get("bankCode"),
            "agency": bank.get("agency"),
            "account": bank.get("account"),
        }
        if whole:
            return "Bank {bank} · {agency} / {account}".format(**parts)
        return _("Bank %(bank)s · %(agency)s / %(account)s", **parts)
    address = payout.crypto_address or ""
    if not whole:
        address = f"{address[:ADDRESS_SHOWN]}…{address[-ADDRESS_SHOWN:]}"
    return f"{address} ({payout.crypto_network})"


def _list_page(filters: PayoutFilters, form: PixPayoutForm, status: int = 200):
    membership = current_membership()
    mode = MODES[filters.mode]
    rows, total = listing.list_payouts(
        g.account_id, mode, filters.status, filters.page, PER_PAGE, filters.q
    )
    html = render_template(
        "dashboard/payouts.html",
        filters=filters,
        payouts=rows,
        total=total,
        last_page=max(1, math.ceil(total / PER_PAGE)),
        status_labels=PAYOUT_STATUS_LABELS,  # the status filter's choices and the badges
        form=form,
        can_request=manager_allowance(membership).allowed,
        cancellable={p.id for p in rows if requesting.cancellability(p, membership).allowed},
        available=wallets.balance(g.account_id, mode, wallets.PRIMARY_CURRENCY).available,
        pix_fee=fees.payout_rule(PayoutType.PIX),
        confirm_form=ConfirmForm(formdata=None),
        destination=destination,
        csv_args=filters.args(page=1),  # the export is every page
    )
    return html, status


def _filters() -> PayoutFilters:
    return PayoutFilters(
        mode=mode_arg(), status=choice_arg("status", STATUSES), q=search_arg(), page=page_arg()
    )


def _csv_values(payout: Payout) -> tuple:
    """One payout; free text goes through the wallet export's formula guard."""
    return (
        payout.id,
        payout.created_at,
        str(payout.status),
        str(payout.type),
        Money(payout.amount, payout.currency),
        Money(payout.fee, payout.currency),
        Money(payout.wallet_debit, payout.currency),
        spreadsheet_cell(payout.currency),
        spreadsheet_cell(destination(payout, whole=True)),
        spreadsheet_cell(payout.description or ""),
        spreadsheet_cell(payout.failure_reason or ""),
        payout.completed_at,
    )


def _blank_form(mode: str) -> PixPayoutForm:
    return PixPayoutForm(formdata=None, mode=mode, idempotency_key=new_form_key())


def _new_payout(form: PixPayoutForm) -> NewPayout:
    return NewPayout(
        type="PIX",
        amount=form.amount.data,
        currency="BRL",
        pix_key=form.pix_key.data,
        pix_key_type=form.pix_key_type.data,
        description=form.description.data or None,
        test=form.mode.data == "test",
        destination_fields={"pixKey", "pixKeyType"},
    )
