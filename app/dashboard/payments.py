"""Payments in the dashboard: every transaction of the account, whatever its method.

The list with its filters and its CSV export, one payment with its method instructions, fees,
refunds and actions (cancel, refund, receipt download), test payments and test Pix charges,
and the stats view with its daily volume chart.

Every read and write goes through the services behind `/v1/payments` and `/v1/charges`
(`payments`, `refunds`, `receipts`, `payment_stats`, `charges`), so the pages show what the
API answers and the forms obey the API's rules. A button or form is shown exactly when its
action would succeed: the services' allowances (`payments.cancellability`,
`refunds.refundability`, `refunds.cancellability`, `charges.payability`) and the role rule
say so. Those services know no roles (an API key acts for its whole account), so the role
rule is added here: cancelling and refunding are for OWNER and ADMIN (`manager_allowance`),
and a MEMBER who posts the form by hand gets 403.
Filters live in the query string so a reload, a shared link or a page link keeps them.
"""

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, timedelta

from flask import (
    Response,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.charges import MODES
from app.dashboard.exports import csv_response, spreadsheet_cell, utc_text
from app.dashboard.filters import QueryFilters, date_arg, day_start
from app.dashboard.forms import (
    CancelPaymentForm,
    CancelRefundForm,
    RefundForm,
    TestChargeForm,
    TestPaymentForm,
)
from app.dashboard.session import current_membership, member_required
from app.dashboard.submit_once import new_form_key, show_error, submit_once
from app.dashboard.wallets import mode_arg, page_arg
from app.errors import ApiError, InvalidRequest
from app.extensions import db
from app.formats.charges import CHARGE_ID_PREFIX, PUBLIC_STATUS, checkout_url
from app.formats.payments import METHOD_LABELS, payment_fields, transaction_id
from app.methods import boleto
from app.models import KeyMode, Origin, PendingReason, Refund, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services import charges, payment_stats, payments, receipts, refunds
from app.services.allowances import Allowance, manager_allowance
from app.services.charges import RESERVED_METADATA_KEYS, Customer, NewCharge
from app.services.payments import DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, NewPayment, PaymentQuery
from app.services.refunds import RefundOrder
from app.templating import DISPLAY_TIMEZONE, money

STATUSES = tuple(status.value for status in TransactionStatus)
PIX = "PIX"
CURRENCY = re.compile(r"[A-Z0-9]{3,8}")
EXPORT_PAGE_SIZE = MAX_PAGE_LIMIT  # rows fetched per query while the CSV streams
CSV_COLUMNS = (
    "id",
    "created_at",
    "status",
    "amount",
    "currency",
    "payment_methods",
    "paid_with",
    "provider_fee",
    "platform_fee",
    "net_amount",
    "customer_name",
    "customer_email",
    "description",
    "paid_at",
)
DEFAULT_STATS_DAYS = 7
STATS_DAY_CHOICES = (7, 30, 90, 365)
# The service names fields the API's way; the forms name them their own.
PAYMENT_FIELD_FOR_PARAM = {
    "amount": "amount",
    "currency": "currency",
    "paymentMethods": "payment_methods",
    "customerName": "customer_name",
    "customerEmail": "customer_email",
    "metadata.phone": "phone",
}
REFUND_FIELD_FOR_PARAM = {
    "amount": "amount",
    "reason": "reason",
    "strategy": "strategy",
    "destinationKey": "destination_key",
    "passFeeToTenant": "pass_fee_to_tenant",
}
WAITING_FOR_FUNDS = {
    PendingReason.CHARGE_PENDING: (
        "Waiting for funds: the payment's settlement has not been released yet"
    ),
    PendingReason.INSUFFICIENT_FUNDS: "Waiting for funds: the balance does not cover it",
}
ROLE_REFUSAL = "Only an OWNER or ADMIN of the account can cancel or refund payments."
CHARGE_FIELD_FOR_PARAM = {
    "amount": "amount",
    "description": "description",
    "expires_in": "expires_in",
    "customer.name": "customer_name",
    "customer.document": "customer_document",
    "expected_payer_tax_id": "expected_payer_tax_id",
}


@dataclass(frozen=True)
class PaymentFilters(QueryFilters):
    """The list's query string: every link (mode, pages, the CSV export) keeps the others.
    `startDate` and `endDate` are São Paulo calendar days, both inclusive."""

    OMITTED_AT_DEFAULT = ("page", "limit")

    mode: str = "test"
    status: str | None = None
    method: str | None = None
    startDate: str | None = None  # noqa: N815 (the API's query names)
    endDate: str | None = None  # noqa: N815
    limit: int = DEFAULT_PAGE_LIMIT
    page: int = 1

    @property
    def filtered(self) -> bool:
        return bool(self.status or self.method or self.startDate or self.endDate)

    def query(self, **changes) -> PaymentQuery:
        """The service's query for these filters (newest first), with `changes` applied."""
        start = day_start(self.startDate) if self.startDate else None
        end = None
        if self.endDate:  # the last instant before the next São Paulo midnight
            next_day = date.fromisoformat(self.endDate) + timedelta(days=1)
            end = day_start(next_day.isoformat()) - timedelta(microseconds=1)
        query = PaymentQuery(
            page=self.page,
            limit=self.limit,
            status=TransactionStatus(self.status) if self.status else None,
            method=self.method,
            start=start,
            end=end,
        )
        return replace(query, **changes)


@dataclass(frozen=True)
class Bar:
    """One day of the chart: its paid volume and where its bar stands."""

    day: date
    volume: int
    x: int
    y: int
    width: int
    height: int

    @property
    def label_x(self) -> int:
        return self.x + self.width // 2


@dataclass(frozen=True)
class VolumeChart:
    """The daily paid volume of one currency as SVG geometry, in whole pixels."""

    LEFT, RIGHT, TOP, PLOT_HEIGHT, BOTTOM = 120, 16, 16, 180, 48
    PLOT_WIDTH, MIN_STEP, MAX_BAR_WIDTH, X_LABELS = 640, 4, 40, 8

    currency: str
    bars: tuple[Bar, ...]
    max_volume: int
    step: int

    @classmethod
    def build(cls, currency: str, daily: list[dict]) -> "VolumeChart":
        volumes = [(date.fromisoformat(p["date"]), p["currencies"].get(currency, 0)) for p in daily]
        top = max((volume for _, volume in volumes), default=0)
        step = max(cls.MIN_STEP, cls.PLOT_WIDTH // max(len(volumes), 1))
        width = max(1, min(step * 3 // 4, cls.MAX_BAR_WIDTH))
        bars = []
        for index, (day, volume) in enumerate(volumes):
            height = volume * cls.PLOT_HEIGHT // top if top else 0
            height = max(height, 1) if volume else 0  # a day with money never looks empty
            x = cls.LEFT + index * step + (step - width) // 2
            bars.append(Bar(day, volume, x, cls.TOP + cls.PLOT_HEIGHT - height, width, height))
        return cls(currency=currency, bars=tuple(bars), max_volume=top, step=step)

    @property
    def width(self) -> int:
        return self.LEFT + self.step * len(self.bars) + self.RIGHT

    @property
    def height(self) -> int:
        return self.TOP + self.PLOT_HEIGHT + self.BOTTOM

    @property
    def baseline(self) -> int:
        return self.TOP + self.PLOT_HEIGHT

    @property
    def plot_right(self) -> int:
        return self.width - self.RIGHT

    @property
    def y_ticks(self) -> list[tuple[int, str]]:
        """Gridlines at zero, half and the highest day, labelled in the currency."""
        if not self.max_volume:
            return [(self.baseline, money(0, self.currency))]
        values = (0, self.max_volume // 2, self.max_volume)
        plot, top = self.PLOT_HEIGHT, self.max_volume
        return [(self.baseline - v * plot // top, money(v, self.currency)) for v in values]

    @property
    def x_labels(self) -> list[Bar]:
        """At most `X_LABELS` days labelled, evenly spaced, the most recent always."""
        every = max(1, math.ceil(len(self.bars) / self.X_LABELS))
        return [bar for i, bar in enumerate(reversed(self.bars)) if i % every == 0]

    @property
    def total(self) -> int:
        return sum(bar.volume for bar in self.bars)

    @property
    def best_day(self) -> Bar | None:
        return max(self.bars, key=lambda bar: bar.volume) if self.max_volume else None


@bp.get("/payments")
@member_required
def payments_page() -> ResponseReturnValue:
    """One page of the mode's transactions, newest first; test mode offers the test forms."""
    filters = _filters()
    return _list_page(filters)


@bp.post("/payments")
@member_required
def create_test_payment() -> ResponseReturnValue:
    """Test mode only, so any member may: the sandbox moves no money. The provider finalises
    the payment in a job, so the page it lands on says so until the instructions are there."""
    form = TestPaymentForm()
    if not form.validate_on_submit():
        return _list_page(PaymentFilters(), payment_form=form, status=400)
    new = NewPayment(
        amount=form.amount.data,
        payment_methods=list(form.payment_methods.data),
        currency=form.currency.data.strip().upper(),
        customer_name=form.customer_name.data or None,
        customer_email=form.customer_email.data or None,
        metadata={payments.PHONE_KEY: form.phone.data.strip()} if form.phone.data else {},
    )
    try:
        raw_id = submit_once(
            form, lambda: payments.create_payment(g.account_id, KeyMode.TEST, new).id
        )
    except ApiError as error:
        show_error(form, error, PAYMENT_FIELD_FOR_PARAM)
        return _list_page(PaymentFilters(), payment_form=form, status=error.status)
    flash("Test payment created. The provider is finalising it.", "info")
    return redirect(url_for("dashboard.payment_page", payment_id=raw_id, mode="test"), 303)


@bp.post("/charges")
@member_required
def create_test_charge() -> ResponseReturnValue:
    """A test Pix charge with the `/v1/charges` rules (description, expiry, payer lock)."""
    form = TestChargeForm()
    if not form.validate_on_submit():
        return _list_page(PaymentFilters(), charge_form=form, status=400)
    new = NewCharge(
        amount=form.amount.data,
        description=form.description.data or None,
        expires_in=form.expires_in.data,
        customer=Customer(
            name=form.customer_name.data or None, document=form.customer_document.data or None
        ),
        expected_payer_tax_id=form.expected_payer_tax_id.data or None,
    )
    try:
        raw_id = submit_once(
            form, lambda: charges.create_charge(g.account_id, KeyMode.TEST, new).id
        )
    except ApiError as error:
        show_error(form, error, CHARGE_FIELD_FOR_PARAM)
        return _list_page(PaymentFilters(), charge_form=form, status=error.status)
    flash("Test charge created", "info")
    return redirect(
        url_for("dashboard.payment_page", payment_id=CHARGE_ID_PREFIX + raw_id, mode="test"),
        303,
    )


@bp.get("/payments/export.csv")
@member_required
def payments_csv() -> ResponseReturnValue:
    """The filtered list, every page of it, streamed as it is read (amounts in minor units,
    times in UTC). Rows created after the export started are left out, so the pages it reads
    one after the other never shift under it."""
    filters = _filters()
    query = filters.query(limit=EXPORT_PAGE_SIZE, page=1)
    now = utcnow()
    query = replace(query, end=min(query.end, now) if query.end else now)
    rows = _export_rows(g.account_id, MODES[filters.mode], query)
    return csv_response(CSV_COLUMNS, rows, f"payments-{filters.mode}.csv")


@bp.get("/payments/stats")
@member_required
def payment_stats_page() -> ResponseReturnValue:
    """Totals, success rate, volume per currency and method, and the daily volume chart."""
    mode, days = mode_arg(), _days()
    now = utcnow()
    stats = payment_stats.payment_stats(g.account_id, MODES[mode], days, now)
    currencies = sorted(
        {row["currency"] for row in stats["volumeByCurrency"]}
        | {code for point in stats["dailyVolume"] for code in point["currencies"]}
    )
    currency = _chart_currency(currencies)
    window = payment_stats.stats_window(days, now)
    return render_template(
        "dashboard/payment_stats.html",
        mode=mode,
        days=days,
        day_choices=STATS_DAY_CHOICES,
        max_days=payment_stats.MAX_DAYS,
        stats=stats,
        first_day=window.first_day,
        success_rate=f"{stats['successRate']:.1%}" if stats["totalTransactions"] else "—",
        currencies=sorted({*currencies, currency}),
        chart=VolumeChart.build(currency, stats["dailyVolume"]),
        method_labels=METHOD_LABELS,
    )


@bp.get("/payments/<payment_id>")
@member_required
def payment_page(payment_id: str) -> ResponseReturnValue:
    """Every field of one transaction (by raw, tx_ or ch_ id), its refunds and actions."""
    return _detail_page(mode_arg(), payment_id)


@bp.post("/payments/<payment_id>/cancel")
@member_required
def cancel_payment(payment_id: str) -> ResponseReturnValue:
    """WAITING_PAYMENT, PENDING or PROCESSING → CANCELLED (OWNER and ADMIN only)."""
    mode = mode_arg()
    _role().require()
    form = CancelPaymentForm()
    if not form.validate_on_submit():
        return _detail_page(mode, payment_id, cancel_form=form, status=400)
    try:
        submit_once(form, lambda: payments.cancel(g.account_id, MODES[mode], payment_id).id)
    except ApiError as error:
        show_error(form, error, {})
        return _detail_page(mode, payment_id, cancel_form=form, status=error.status)
    flash("Payment cancelled: the customer can no longer pay it.", "info")
    return redirect(url_for("dashboard.payment_page", payment_id=payment_id, mode=mode), 303)


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
    flash(f"Refund of {money(refund.amount, refund.currency)} {_requested(refund)}", "info")
    return redirect(url_for("dashboard.payment_page", payment_id=payment_id, mode=mode), 303)


@bp.post("/payments/<payment_id>/refunds/<refund_id>/cancel")
@member_required
def cancel_refund(payment_id: str, refund_id: str) -> ResponseReturnValue:
    """Withdraw a refund still waiting for funds (OWNER and ADMIN only): it ends FAILED,
    and nothing was debited."""
    mode = mode_arg()
    _role().require()
    form = CancelRefundForm()
    if not form.validate_on_submit():
        return _detail_page(mode, payment_id, cancel_refund_form=form, status=400)
    try:
        submit_once(
            form,
            lambda: refunds.cancel_refund(g.account_id, MODES[mode], payment_id, refund_id).id,
        )
    except ApiError as error:
        show_error(form, error, {})
        return _detail_page(mode, payment_id, cancel_refund_form=form, status=error.status)
    flash("Refund cancelled: nothing was debited, and it will not be sent.", "info")
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


def _list_page(
    filters: PaymentFilters,
    *,
    payment_form: TestPaymentForm | None = None,
    charge_form: TestChargeForm | None = None,
    status: int = 200,
) -> tuple[str, int]:
    rows, total = payments.list_payments(g.account_id, MODES[filters.mode], filters.query())
    test_mode = filters.mode == "test"
    html = render_template(
        "dashboard/payments.html",
        filters=filters,
        rows=rows,
        total=total,
        last_page=max(1, math.ceil(total / filters.limit)),
        statuses=STATUSES,
        public_status=PUBLIC_STATUS,
        method_labels=METHOD_LABELS,
        shown_id=transaction_id,
        csv_args=filters.args(page=1, limit=DEFAULT_PAGE_LIMIT),  # the export is every page
        payment_form=(payment_form or _blank_payment_form()) if test_mode else None,
        charge_form=(charge_form or _blank_charge_form()) if test_mode else None,
        sao_paulo=DISPLAY_TIMEZONE.key,
    )
    db.session.commit()  # transactions found expired on read
    return html, status


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
        method_labels=METHOD_LABELS,
        finalising=payment.status is TransactionStatus.PENDING
        and payment.origin is Origin.PAYMENTS
        and payment.finalised_at is None,
        checkout_url=checkout_url(payment),
        boleto_line=boleto.formatted_line(payment.boleto_line) if payment.boleto_line else None,
        description=metadata.get("description"),
        failure=metadata.get("failure"),
        phone=metadata.get(payments.PHONE_KEY),
        metadata={k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS},
        payable=charges.payability(payment).allowed,
        refunds=refund_rows,
        waiting_for_funds=WAITING_FOR_FUNDS,
        refundability=refundability,
        can_cancel=(cancellability & role).allowed,
        can_refund=(refundability & role).allowed,
        # A fresh idempotency key per refund whose cancel button is shown.
        cancellable_refunds={refund.id: new_form_key() for refund in waiting if role.allowed},
        role_refusal=role.reason if anything_allowed else None,
        is_pix=payment.paid_with == PIX,
        cancel_form=cancel_form or CancelPaymentForm(formdata=None, idempotency_key=new_form_key()),
        refund_form=refund_form or RefundForm(formdata=None, idempotency_key=new_form_key()),
        cancel_refund_form=cancel_refund_form or CancelRefundForm(formdata=None),
    )
    db.session.commit()  # a transaction found expired on read
    return html, status


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


def _export_rows(account_id: str, mode: KeyMode, query: PaymentQuery) -> Iterator[tuple]:
    """The CSV values of every matching transaction, a page of rows per query; each page is
    turned into values before the commit (which keeps transactions found expired on read)."""
    page = 1
    while True:
        rows, _ = payments.list_payments(account_id, mode, replace(query, page=page))
        values = [_csv_values(row) for row in rows]
        db.session.commit()
        yield from values
        if len(rows) < query.limit:
            return
        page += 1


def _csv_values(payment: Transaction) -> tuple:
    """One transaction; free text goes through the wallet export's formula guard."""
    return (
        spreadsheet_cell(transaction_id(payment)),
        utc_text(payment.created_at),
        str(payment.status),
        payment.amount,
        spreadsheet_cell(payment.currency),
        " ".join(payment.payment_methods),
        payment.paid_with or "",
        "" if payment.provider_fee is None else payment.provider_fee,
        "" if payment.platform_fee is None else payment.platform_fee,
        "" if payment.net_amount is None else payment.net_amount,
        spreadsheet_cell(payment.customer_name or ""),
        spreadsheet_cell(payment.customer_email or ""),
        spreadsheet_cell(str(payment.metadata_.get("description") or "")),
        utc_text(payment.paid_at),
    )


def _filters() -> PaymentFilters:
    status = request.args.get("status") or None
    if status is not None and status not in STATUSES:
        raise InvalidRequest("status is one of: " + ", ".join(STATUSES) + ".", param="status")
    method = request.args.get("method") or None
    if method is not None and method not in payments.METHODS:
        raise InvalidRequest(
            "method is one of: " + ", ".join(payments.METHODS) + ".", param="method"
        )
    start = date_arg("startDate")
    end = date_arg("endDate")
    if start and end and start > end:
        raise InvalidRequest("startDate is after endDate.", param="startDate")
    return PaymentFilters(
        mode=mode_arg(),
        status=status,
        method=method,
        startDate=start,
        endDate=end,
        limit=_limit(),
        page=page_arg(),
    )


def _limit() -> int:
    text = request.args.get("limit") or str(DEFAULT_PAGE_LIMIT)
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_PAGE_LIMIT:
        raise InvalidRequest(f"limit is a number from 1 to {MAX_PAGE_LIMIT}.", param="limit")
    return int(text)


def _days() -> int:
    text = request.args.get("days") or str(DEFAULT_STATS_DAYS)
    limit = payment_stats.MAX_DAYS
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= limit:
        raise InvalidRequest(f"days is a number from 1 to {limit}.", param="days")
    return int(text)


def _chart_currency(currencies: list[str]) -> str:
    """`currency` from the query string, else the first one with volume, else BRL."""
    asked = (request.args.get("currency") or "").strip().upper()
    if asked and not CURRENCY.fullmatch(asked):
        raise InvalidRequest("currency is a currency code, like BRL.", param="currency")
    return asked or (currencies[0] if currencies else payments.DEFAULT_CURRENCY)


def _role() -> Allowance:
    """Cancelling and refunding are for the account's OWNER and ADMIN."""
    return manager_allowance(current_membership(), ROLE_REFUSAL, "PAYMENT_ROLE_REQUIRED")


def _requested(refund: Refund) -> str:
    """What became of a refund just requested, for the flash message."""
    if refund.pending_reason is not None:
        return (
            f"requested ({refund.status}). {WAITING_FOR_FUNDS[refund.pending_reason]}. It is "
            "debited and sent as soon as the money is there; you can cancel it until then."
        )
    return (
        f"requested ({refund.status}): it was debited from your wallet and is being sent to "
        "the provider."
    )


def _blank_payment_form() -> TestPaymentForm:
    return TestPaymentForm(formdata=None, idempotency_key=new_form_key())


def _blank_charge_form() -> TestChargeForm:
    return TestChargeForm(formdata=None, idempotency_key=new_form_key())
