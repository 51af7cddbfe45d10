"""Back-office for platform staff: the merchant accounts on the platform, Pix payments held
for manual review (payer-locked charges whose payer the bank did not identify), and payouts
waiting for approval.

Release and return call `pix_payments`, approve and reject call `payouts`: the same functions
as the admin API, so the money moves (ledger credit, Pix return, payout debit) are decided in
one place and audited there. Dispute handling joins this area with the disputes work.
"""

from collections.abc import Callable

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from app.dashboard import bp
from app.dashboard.actions import act_then_return
from app.dashboard.forms import ConfirmForm
from app.dashboard.forms.payouts import PayoutRejectionForm
from app.dashboard.payouts import destination
from app.dashboard.session import staff_required
from app.extensions import db
from app.formats import charges as charge_format
from app.formats.labels import MODE_LABELS
from app.models import Payout, RefundStatus, Transaction
from app.providers.base import ProviderError
from app.services import accounts
from app.services.payouts import decisions as payout_decisions
from app.services.transactions import held_payment_review, pix_payments
from app.templating import money

# What staff are told after returning a held Pix: the return's own status, never a success it
# has not had yet (a live PSP may still be processing it).
RETURN_OUTCOMES = {
    RefundStatus.REFUNDED: _l(
        "The %(amount)s Pix for %(charge)s: returned to the payer; the charge is refunded."
    ),
    RefundStatus.IN_PROGRESS: _l(
        "The %(amount)s Pix for %(charge)s: the return to the payer is being processed; "
        "the charge is refunded."
    ),
}


@bp.get("/back-office")
@staff_required
def back_office() -> ResponseReturnValue:
    return render_template(
        "dashboard/back_office.html",
        summaries=accounts.platform_accounts(),
        held_charges=held_payment_review.review_queue(),
        pending_payouts=payout_decisions.pending_payouts_with_accounts(),
        confirm_form=ConfirmForm(formdata=None),
        rejection_form=PayoutRejectionForm(formdata=None),
        destination=destination,
        mode_labels=MODE_LABELS,
    )


@bp.post("/back-office/charges/<charge_id>/release")
@staff_required
def release_held_charge(charge_id: str) -> ResponseReturnValue:
    """Staff confirmed the payer: the held Pix is credited to the merchant."""
    charge = pix_payments.release_held(charge_format.raw_id(charge_id), current_user.id)
    db.session.commit()
    flash(
        _(
            "The %(amount)s Pix for %(charge)s released: the merchant was credited.",
            **_held(charge),
        ),
        "info",
    )
    return redirect(url_for("dashboard.back_office"), 303)


@bp.post("/back-office/charges/<charge_id>/return")
@staff_required
def return_held_charge(charge_id: str) -> ResponseReturnValue:
    """The payer could not be confirmed: the held Pix goes back to them."""
    try:
        returned = pix_payments.return_held(charge_format.raw_id(charge_id), current_user.id)
    except ProviderError:
        db.session.rollback()
        flash(_("The payment provider could not be reached; nothing changed. Try again."), "error")
        return redirect(url_for("dashboard.back_office"), 303)
    db.session.commit()
    charge = db.session.get(Transaction, returned.transaction_id)
    flash(RETURN_OUTCOMES[returned.status] % _held(charge), "info")
    return redirect(url_for("dashboard.back_office"), 303)


@bp.post("/back-office/payouts/<payout_id>/approve")
@staff_required
def approve_payout(payout_id: str) -> ResponseReturnValue:
    """Staff approve: amount + fee are debited now and the payout is sent after the commit."""
    return _decided(
        lambda: payout_decisions.approve(payout_id, current_user.id),
        lambda amount, destination: _(
            "The %(amount)s payout to %(destination)s approved: the amount and fee were debited "
            "and it is being sent.",
            amount=amount,
            destination=destination,
        ),
    )


@bp.post("/back-office/payouts/<payout_id>/reject")
@staff_required
def reject_payout(payout_id: str) -> ResponseReturnValue:
    """Staff refuse a pending payout; it was never debited, so nothing moves."""
    form = PayoutRejectionForm()
    if not form.validate_on_submit():
        flash(f"{form.reason.label.text}: " + " ".join(form.reason.errors), "error")
        return redirect(url_for("dashboard.back_office"), 303)
    return _decided(
        lambda: payout_decisions.reject(payout_id, current_user.id, form.reason.data or None),
        lambda amount, destination: _(
            "The %(amount)s payout to %(destination)s rejected: nothing was debited.",
            amount=amount,
            destination=destination,
        ),
    )


def _decided(
    decide: Callable[[], Payout], outcome: Callable[[str, str], str]
) -> ResponseReturnValue:
    """Commit a staff decision, or show why the service refused it (say, the merchant's
    balance no longer covers the payout, or someone decided it first) on the page.
    `outcome` says it from the payout's amount and destination."""
    return act_then_return(
        decide,
        lambda payout: outcome(money(payout.amount, payout.currency), destination(payout)),
        url_for("dashboard.back_office"),
    )


def _held(charge: Transaction) -> dict[str, str]:
    """The held Pix's amount and charge id, as the messages about it name them."""
    return {
        "amount": money(charge.amount, charge.currency),
        "charge": charge_format.charge_id(charge),
    }
