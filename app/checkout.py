"""The hosted checkout page: what a payer opens from a charge's `checkout_url`.

It is public: anyone the merchant gives the address to (it holds the charge's raw id, which
the merchant also sees in the API and webhooks) may open it, so it shows what a payer needs
and nothing more: amount, merchant name, description, QR, copy-and-paste code, expiry and
status. No customer data, txid, account id or end-to-end id is ever rendered. The page
polls `/status` (a three-field JSON) from `static/checkout.js`, since the CSP forbids inline
script. Test-mode charges get a button that pays them through the sandbox's simulated bank.
"""

from datetime import datetime

from flask import Blueprint, Flask, jsonify, redirect, render_template, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response

from app.errors import InvalidRequest, NotFound
from app.extensions import db
from app.formats.charges import PUBLIC_STATUS
from app.models import Account, KeyMode, Transaction
from app.models.base import utcnow
from app.services import charges, sandbox

bp = Blueprint("checkout", __name__, url_prefix="/checkout")

PENDING = "pending"
STATUS_LABELS = {
    "pending": "Waiting for payment",
    "processing": "Payment under review",
    "paid": "Paid",
    "expired": "Expired",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "refunded": "Refunded",
    "disputed": "Disputed",
}


class SimulatePaymentForm(FlaskForm):
    """The test-mode "Simulate payment" button: only the CSRF token travels."""


@bp.get("/<charge_id>")
def page(charge_id: str) -> str:
    """The payer's page; its state is rendered server-side and kept live by checkout.js."""
    charge = _charge(charge_id)
    status = PUBLIC_STATUS[charge.status]
    can_simulate = charge.mode is KeyMode.TEST and status == PENDING
    seconds_left = _seconds_left(charge, status)
    return render_template(
        "checkout/page.html",
        charge=charge,
        status=status,
        status_labels=STATUS_LABELS,
        merchant_name=db.session.get(Account, charge.account_id).name,
        description=charge.metadata_.get("description"),
        qr_src=_qr_src(charge),
        seconds_left=seconds_left,
        countdown=_countdown(seconds_left),
        test_mode=charge.mode is KeyMode.TEST,
        simulate_form=SimulatePaymentForm(formdata=None) if can_simulate else None,
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
    """Pay a pending test-mode charge as the sandbox bank would; live charges are 404.

    A charge that is no longer pending (a double click, a stale tab) is left alone: paying it
    again would make the sandbox return a second Pix to the payer.
    """
    if not SimulatePaymentForm().validate_on_submit():
        raise InvalidRequest("This form has expired. Reload the page and try again.")
    charge = _charge(charge_id)
    if charge.mode is not KeyMode.TEST:
        raise NotFound("No such charge.")
    if PUBLIC_STATUS[charge.status] == PENDING:
        sandbox.simulate_payment(charge)
        db.session.commit()
    return redirect(url_for("checkout.page", charge_id=charge.id), 303)


def register_checkout(app: Flask) -> None:
    app.register_blueprint(bp)


def _charge(charge_id: str) -> Transaction:
    """The charge behind the address, expired on read (committed here, as the API does)."""
    charge = charges.find_for_checkout(charge_id)
    if charge is None:
        raise NotFound("No such checkout.")
    db.session.commit()
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
