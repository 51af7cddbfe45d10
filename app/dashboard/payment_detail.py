"""One payment in the dashboard: every field of the transaction, each method's instructions
while it can be paid, its refunds, and the actions (cancel, refund, cancel a refund waiting
for funds, download the receipt).

Reads and writes go through the services behind `/v1/payments` (`payments`, `refunds`,
`receipts`, `charges`), so the page shows what the API answers and the forms obey its rules. A
button or form is shown exactly when its action would succeed: the services' allowances
(`payments.cancellability`, `refunds.refundability`, `refunds.cancellability`,
`charges.payability`) and the role rule say so. Those services know no roles (an API key acts
for its whole account), so the role rule is added here: cancelling and refunding are for OWNER
and ADMIN (`manager_allowance`), and a MEMBER who posts the form by hand gets 403.
"""

from flask import Response, flash, g, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from app.dashboard import bp
from app.dashboard.forms.payments import CancelPaymentForm, CancelRefundForm, RefundForm
from app.dashboard.params import MODES, mode_arg
from app.dashboard.session import current_membership, member_required
from app.dashboard.submit_once import new_form_key, show_error, submit_once
from app.errors import ApiError
from app.extensions import db
from app.formats.charges import PUBLIC_STATUS, checkout_url, due_fields
from app.formats.labels import REFUND_STATUS_LABELS, TRANSACTION_STATUS_LABELS
from app.formats.payments import METHOD_LABELS, payment_fields, transaction_id
from app.methods import boleto
from app.models import Origin, PendingReason, Refund, TransactionStatus
from app.pix import due
from app.services.allowances import Allowance, manager_allowance
from app.services.transactions import charges, payments, receipts, refunds
from app.services.transactions.charges import RESERVED_METADATA_KEYS
from app.services.transactions.refunds import RefundOrder
from app.templating import money, refusal_text

PIX = "PIX"
REFUND_FIELD_FOR_PARAM = {
    "amount": "amount",
    "reason": "reason",
    "strategy": "strategy",
    "destinationKey": "destination_key",
    "passFeeToTenant": "pass_fee_to_tenant",
}
WAITING_FOR_FUNDS = {
    PendingReason.CHARGE_PENDING: _l(
        "Waiting for funds: the payment's settlement has not been released yet"
    ),
    PendingReason.INSUFFICIENT_FUNDS: _l("Waiting for funds: the balance does not cover it"),
}
ROLE_REFUSAL = _l("Only an OWNER or ADMIN of the account can cancel or refund payments.")


@bp.get("/payments/<payment_id>")
@member_required
def payment_page(payment_id: str) -> ResponseReturnValue:
    """Every field of one transaction (by raw, tx_ or ch_ id), its refunds and actions."""
    return _detail_page(mode_arg(), payment_id)


@bp.post("/payments/<payment_id>/cancel")
@member_required
def cancel_payment(payment_id: str) -> ResponseReturnValue:
    """WAITING_PAYMENT, PENDING or PROCESSING → CANCELLED (OWNER and ADMIN only)."""
    return _cancel(
        payment_id,
        CancelPaymentForm(),
        "cancel_form",
        lambda mode: payments.cancel(g.account_id, MODES[mode], payment_id).id,
        _("Payment cancelled: the customer can no longer pay it."),
    )


@bp.post("/payments/<payment_id>/refund")
@member_required
def refund_payment(payment_id: str) -> ResponseReturnValue:
    """Refund a PAID or APPROVED transaction in full or in part (OWNER and ADMIN only); the
    wallet is debited when it can fund it, and the provider is asked in a job."""
    mode = mode_arg()
    _role().require()
    form = RefundForm()
    if not form.validate_on_submit():
        return _detail_page(mode, payment_id, refund_form=form, status=400)
    payment = payments.get_payment(g.account_id, MODES[mode], payment_id)
    order = _refund_order(form, is_pix=payment.paid_with == PIX)
    try:
        refund_id = submit_once(
            form,
            lambda: refunds.request_refund(g.account_id, MODES[mode], payment_id, order).id,
        )
    except ApiError as error:
        show_error(form, error, REFUND_FIELD_FOR_PARAM)
        return _detail_page(mode, payment_id, refund_form=form, status=error.status)
    _, rows = refunds.list_refunds(g.account_id, MODES[mode], payment_id)
    refund = next(row for row in rows if row.id == refund_id)
    flash(_requested(refund), "info")
    return redirect(url_for("dashboard.payment_page", payment_id=payment_id, mode=mode), 303)


@bp.post("/payments/<payment_id>/refunds/<refund_id>/cancel")
@member_required
def cancel_refund(payment_id: str, refund_id: str) -> ResponseReturnValue:
    """Withdraw a refund still waiting for funds (OWNER and ADMIN only): it ends FAILED,
    and nothing was debited."""
    return _cancel(
        payment_id,
        CancelRefundForm(),
        "cancel_refund_form",
        lambda mode: refunds.cancel_refund(g.account_id, MODES[mode], payment_id, refund_id).id,
        _("Refund cancelled: nothing was debited, and it will not be sent."),
    )


def _cancel(payment_id, form, form_name: str, act, done: str) -> ResponseReturnValue:
    """A cancel button on the payment's page (OWNER and ADMIN only): applied once, its
    refusal shown on the page in `form_name`'s place, `done` flashed after."""
    mode = mode_arg()
    _role().require()
    if not form.validate_on_submit():
        return _detail_page(mode, payment_id, **{form_name: form}, status=400)
    try:
        submit_once(form, lambda: act(mode))
    except ApiError as error:
        show_error(form, error, {})
        return _detail_page(mode, payment_id, **{form_name: form}, status=error.status)
    flash(done, "info")
    return redirect(url_for("dashboard.payment_page", payment_id=payment_id, mode=mode), 303)


@bp.get("/payments/<payment_id>/receipt.pdf")
@member_required
def payment_receipt(payment_id: str) -> ResponseReturnValue:
    """The PDF receipt of a paid transaction, as a download; 409 before it is paid."""
    mode = mode_arg()
    pdf = receipts.receipt(g.account_id, MODES[mode], payment_id)
    shown_id = transaction_id(payments.get_payment(g.account_id, MODES[mode], payment_id))
    db.session.commit()  # a transaction found expired on read
    return Response(
        pdf,
        mimetype=receipts.PDF,
        headers={"Content-Disposition": f'attachment; filename="receipt-{shown_id}.pdf"'},
    )


def _detail_page(
    mode: str,
    payment_id: str,
    *,
    cancel_form: CancelPaymentForm | None = None,
    refund_form: RefundForm | None = None,
    cancel_refund_form: CancelRefundForm | None = None,
    status: int = 200,
) -> tuple[str, int]:
    payment, refund_rows = refunds.list_refunds(g.account_id, MODES[mode], payment_id)
    metadata = payment.metadata_
    role = _role()
    cancellability = payments.cancellability(payment)
    refundability = refunds.refundability(payment)
    waiting = [refund for refund in refund_rows if refunds.cancellability(refund).allowed]
    anything_allowed = cancellability.allowed or refundability.allowed or bool(waiting)
    html = render_template(
        "dashboard/payment.html",
        mode=mode,
        payment=payment,
        fields=payment_fields(payment),
        shown_id=transaction_id(payment),
        public_status=PUBLIC_STATUS[payment.status],
        status_labels=TRANSACTION_STATUS_LABELS,
        refund_status_labels=REFUND_STATUS_LABELS,
        method_labels=METHOD_LABELS,
        finalising=payment.status is TransactionStatus.PENDING
        and payment.origin is Origin.PAYMENTS
        and payment.finalised_at is None,
        checkout_url=checkout_url(payment),
        due=due_fields(payment) if payment.due_terms is not None else None,
        is_fixed=due.is_fixed,
        boleto_line=boleto.formatted_line(payment.boleto_line) if payment.boleto_line else None,
        description=metadata.get("description"),
        failure_reason=_failure_reason(metadata),
        phone=metadata.get(payments.PHONE_KEY),
        metadata={k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS},
        payable=charges.payability(payment).allowed,
        refunds=refund_rows,
        waiting_for_funds=WAITING_FOR_FUNDS,
        refundability=refundability,
        refund_refusal=refusal_text(refundability.refusal),
        can_cancel=(cancellability & role).allowed,
        can_refund=(refundability & role).allowed,
        # A fresh idempotency key per refund whose cancel button is shown.
        cancellable_refunds={refund.id: new_form_key() for refund in waiting if role.allowed},
        role_refusal=refusal_text(role.refusal) if anything_allowed else None,
        is_pix=payment.paid_with == PIX,
        cancel_form=cancel_form or CancelPaymentForm(formdata=None, idempotency_key=new_form_key()),
        refund_form=refund_form or RefundForm(formdata=None, idempotency_key=new_form_key()),
        cancel_refund_form=cancel_refund_form or CancelRefundForm(formdata=None),
    )
    db.session.commit()  # a transaction found expired on read
    return html, status


def _failure_reason(metadata: dict) -> str | None:
    """Why the payment ended unpaid, in the page's language where the service marked its
    words (a provider's own stay as they came); None when it did not fail."""
    reason = (metadata.get("failure") or {}).get("reason")
    return _(reason) if reason else None


def _refund_order(form: RefundForm, *, is_pix: bool) -> RefundOrder:
    """The form as the service's order; the Pix options count for Pix payments only, and an
    unticked fee box means "not asked" (the service refuses it with a devolution)."""
    if not is_pix:
        return RefundOrder(amount=form.amount.data, reason=form.reason.data or None)
    return RefundOrder(
        amount=form.amount.data,
        reason=form.reason.data or None,
        strategy=form.strategy.data or None,
        pass_fee_to_tenant=True if form.pass_fee_to_tenant.data else None,
        destination_key=(form.destination_key.data or "").strip() or None,
    )


def _role() -> Allowance:
    """Cancelling and refunding are for the account's OWNER and ADMIN."""
    return manager_allowance(current_membership(), str(ROLE_REFUSAL), "PAYMENT_ROLE_REQUIRED")


def _requested(refund: Refund) -> str:
    """The flash message saying what became of a refund just requested."""
    amount, status = money(refund.amount, refund.currency), REFUND_STATUS_LABELS[refund.status]
    if refund.pending_reason is not None:
        return _(
            "Refund of %(amount)s requested (%(status)s). %(waiting)s. It is debited and sent "
            "as soon as the money is there; you can cancel it until then.",
            amount=amount,
            status=status,
            waiting=WAITING_FOR_FUNDS[refund.pending_reason],
        )
    return _(
        "Refund of %(amount)s requested (%(status)s): it was debited from your wallet and is "
        "being sent to the provider.",
        amount=amount,
        status=status,
    )
