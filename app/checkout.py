"""The hosted checkout page: what a payer opens from a charge's `checkout_url`.

It is public: anyone the merchant gives the address to (it holds the charge's raw id, which
the merchant also sees in the API and webhooks) may open it, so it shows what a payer needs
and nothing more: amount (for a charge with a due date, today's, with its due date, fine,
interest, discount and rebate), merchant name, description, each method's instructions (Pix QR and
code, boleto line and slip, Multibanco reference, crypto address) while it can still be
paid (`charges.payability`, the rule the dashboard follows too), expiry and status. No
customer data, txid, account id or end-to-end id is ever rendered. The page polls `/status`
(a three-field JSON) from `static/checkout.js`, since the CSP forbids inline script.

Test-mode transactions get buttons that pay them through the sandbox's simulated payer, and
the sandbox's card page (`cardRedirectUrl`) approves or declines a test card payment. The
boleto slip is a PDF served here, at the address the API gives as `boletoPdfUrl`.
"""

from datetime import datetime

from flask import Blueprint, Flask, g, jsonify, redirect, render_template, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import HiddenField
from wtforms.validators import AnyOf, Optional

from app.errors import InvalidRequest, NotFound
from app.extensions import db
from app.formats.charges import PUBLIC_STATUS
from app.formats.payments import METHOD_LABELS
from app.models import Account, KeyMode, Transaction
from app.models.base import utcnow
from app.pix import due
from app.services import simulated_payer
from app.services.transactions import charges, receipts
from app.services.transactions.payments import CARD, METHODS

bp = Blueprint("checkout", __name__, url_prefix="/checkout")

PENDING = "pending"
STATUS_LABELS = {
    "pending": _l("Waiting for payment"),
    "processing": _l("Payment under review"),
    "paid": _l("Paid"),
    "expired": _l("Expired"),
    "failed": _l("Failed"),
    "cancelled": _l("Cancelled"),
    "refunded": _l("Refunded"),
    "disputed": _l("Disputed"),
}


class SimulatePaymentForm(FlaskForm):
    """A test-mode "Simulate payment" button: the CSRF token and which method pays."""

    method = HiddenField(validators=[Optional(), AnyOf(METHODS)])


class TestCardForm(FlaskForm):
    """The sandbox card page's buttons: approve or decline the test card."""

    outcome = HiddenField(validators=[AnyOf(["approve", "decline"])])


@bp.get("/<charge_id>")
def page(charge_id: str) -> str:
    """The payer's page; its state is rendered server-side and kept live by checkout.js."""
    charge = _charge(charge_id)
    status = PUBLIC_STATUS[charge.status]
    payable = charges.payability(charge).allowed
    seconds_left = _seconds_left(charge, status)
    return render_template(
        "checkout/page.html",
        charge=charge,
        amount_due=due.shown_amount_due(charge, utcnow()) if payable else None,
        status=status,
        status_labels=STATUS_LABELS,
        merchant_name=db.session.get(Account, charge.account_id).name,
        description=charge.metadata_.get("description"),
        payable=payable,
        qr_src=_qr_src(charge) if payable else None,
        seconds_left=seconds_left,
        countdown=_countdown(seconds_left),
        test_mode=charge.mode is KeyMode.TEST,
        simulate_form=(
            SimulatePaymentForm(formdata=None) if payable and charge.mode is KeyMode.TEST else None
        ),
        method_names=METHOD_LABELS,
    )


@bp.get("/<charge_id>/status")
def status(charge_id: str) -> Response:
    """What the page polls: the public status and the time left, nothing else."""
    charge = _charge(charge_id)
    public_status = PUBLIC_STATUS[charge.status]
    return jsonify(
        {
            "status": public_status,
            "expires_at": charge.expires_at.isoformat() if charge.expires_at else None,
            "seconds_left": _seconds_left(charge, public_status),
        }
    )


@bp.post("/<charge_id>/simulate-payment")
def simulate_payment(charge_id: str) -> Response:
    """Pay a pending test-mode charge as the sandbox payer would (by the chosen method);
    live charges are 404.

    A charge that can no longer be paid (a double click, a stale tab) is left alone: paying
    it again would make the sandbox return a second Pix to the payer.
    """
    form = SimulatePaymentForm()
    if not form.validate_on_submit():
        raise InvalidRequest(_("This form has expired. Reload the page and try again."))
    charge = _charge(charge_id)
    if charge.mode is not KeyMode.TEST:
        raise NotFound(_("No such charge."))
    if charges.payability(charge).allowed:
        simulated_payer.pay_by_method(charge, form.method.data or None)
        db.session.commit()
    return redirect(url_for("checkout.page", charge_id=charge.id), 303)


@bp.get("/<charge_id>/boleto.pdf")
def boleto_pdf(charge_id: str) -> Response:
    """The printable boleto slip (`boletoPdfUrl`) of a transaction that offers one."""
    charge = _charge(charge_id)
    if not charge.boleto_barcode:
        raise NotFound(_("This transaction has no boleto."))
    response = Response(receipts.boleto_slip(charge), mimetype=receipts.PDF)
    response.headers["Content-Disposition"] = f'inline; filename="boleto-{charge.id}.pdf"'
    return response


@bp.get("/<charge_id>/card")
def card_page(charge_id: str) -> str:
    """The sandbox acquirer's card page (`cardRedirectUrl` of a test card payment)."""
    charge = _test_card_payment(charge_id)
    return render_template(
        "checkout/card.html",
        charge=charge,
        status=PUBLIC_STATUS[charge.status],
        status_labels=STATUS_LABELS,
        merchant_name=db.session.get(Account, charge.account_id).name,
        payable=charges.payability(charge).allowed,
        form=TestCardForm(formdata=None),
    )


@bp.post("/<charge_id>/card")
def card_payment(charge_id: str) -> Response:
    """Approve or decline the test card, then return the payer to the merchant's
    `metadata.returnUrl` (or to the checkout page when none was given)."""
    form = TestCardForm()
    if not form.validate_on_submit():
        raise InvalidRequest(_("This form has expired. Reload the page and try again."))
    charge = _test_card_payment(charge_id)
    if charges.payability(charge).allowed:
        simulated_payer.pay_by_method(charge, CARD, approved=form.outcome.data == "approve")
        db.session.commit()
    return_url = charge.metadata_.get("returnUrl")
    return redirect(return_url or url_for("checkout.page", charge_id=charge.id), 303)


def register_checkout(app: Flask) -> None:
    app.register_blueprint(bp)


def _charge(charge_id: str) -> Transaction:
    """The charge behind the address, expired on read (committed here, as the API does).

    Its account is the request's (`g.account_id`): a payer whose browser asks for none of the
    page's languages reads it in the account's (`app.i18n.select_locale`)."""
    charge = charges.find_for_checkout(charge_id)
    if charge is None:
        raise NotFound(_("No such checkout."))
    g.account_id = charge.account_id
    db.session.commit()
    return charge


def _test_card_payment(charge_id: str) -> Transaction:
    charge = _charge(charge_id)
    if charge.mode is not KeyMode.TEST or CARD not in charge.payment_methods:
        raise NotFound(_("No such card payment."))
    return charge


def _qr_src(charge: Transaction) -> str | None:
    """A same-origin path to the QR image, so the page works behind any host name."""
    if not charge.pix_br_code or not charge.pix_location_id:
        return None
    return url_for("pix.PixQrImage", location_id=charge.pix_location_id)


def _seconds_left(charge: Transaction, public_status: str, now: datetime | None = None) -> int:
    """Whole seconds until expiry while the charge can be paid; 0 once it cannot."""
    if public_status != PENDING or charge.expires_at is None:
        return 0
    return max(0, int((charge.expires_at - (now or utcnow())).total_seconds()))


def _countdown(seconds: int) -> str:
    """mm:ss, or hh:mm:ss from one hour up (the same format checkout.js keeps ticking)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
