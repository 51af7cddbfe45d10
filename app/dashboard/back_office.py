"""Back-office for platform staff: the merchant accounts on the platform, and Pix payments
held for manual review (payer-locked charges whose payer the bank did not identify).

Release and return call `pix_payments`, the same functions any future review tool would, so
the money moves (ledger credit or Pix return) are decided in one place and audited there.
Payout approvals and dispute handling join this area with the payouts and disputes work.
"""

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user

from app.dashboard import bp
from app.dashboard.forms import ConfirmForm
from app.dashboard.session import staff_required
from app.extensions import db
from app.formats import charges as charge_format
from app.models import Transaction
from app.services import accounts, pix_payments, review
from app.templating import money


@bp.get("/back-office")
@staff_required
def back_office() -> ResponseReturnValue:
    return render_template(
        "dashboard/back_office.html",
        summaries=accounts.platform_accounts(),
        held_charges=review.review_queue(),
        confirm_form=ConfirmForm(formdata=None),
    )


@bp.post("/back-office/charges/<charge_id>/release")
@staff_required
def release_held_charge(charge_id: str) -> ResponseReturnValue:
    """Staff confirmed the payer: the held Pix is credited to the merchant."""
    charge = pix_payments.release_held(charge_format.raw_id(charge_id), current_user.id)
    db.session.commit()
    flash(f"{_described(charge)} released: the merchant was credited.", "info")
    return redirect(url_for("dashboard.back_office"), 303)


@bp.post("/back-office/charges/<charge_id>/return")
@staff_required
def return_held_charge(charge_id: str) -> ResponseReturnValue:
    """The payer could not be confirmed: the held Pix goes back to them."""
    charge = pix_payments.return_held(charge_format.raw_id(charge_id), current_user.id)
    db.session.commit()
    flash(f"{_described(charge)} returned to the payer; the charge is refunded.", "info")
    return redirect(url_for("dashboard.back_office"), 303)


def _described(charge: Transaction) -> str:
    return f"The {money(charge.amount, charge.currency)} Pix for {charge_format.charge_id(charge)}"
