"""Payments in the dashboard: every transaction of the account, whatever its method.

The list with its filters and its CSV export, the test payment and test Pix charge forms, and
the stats view with its daily volume chart; one payment and its actions are in
`payment_detail`. Reads and writes go through the services behind `/v1/payments` and
`/v1/charges` (`payments`, `payment_stats`, `charges`), so the pages show what the API answers
and the forms obey the API's rules.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from flask import flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _

from app.dashboard import bp
from app.dashboard.charts import VolumeChart
from app.dashboard.exports import EXPORT_CHUNK, Money, csv_response, spreadsheet_cell
from app.dashboard.forms.fields import to_minor_units, to_percent
from app.dashboard.forms.payments import TestChargeForm, TestPaymentForm
from app.dashboard.params import (
    MODES,
    DayRange,
    QueryFilters,
    choice_arg,
    date_range_args,
    day_bounds,
    day_range_arg,
    limit_arg,
    mode_arg,
    number_arg,
    page_arg,
    search_arg,
    shown_mode,
)
from app.dashboard.session import member_required
from app.dashboard.submit_once import new_form_key, show_error, submit_once
from app.errors import ApiError, InvalidRequest
from app.extensions import db
from app.formats.charges import CHARGE_ID_PREFIX, PUBLIC_STATUS
from app.formats.labels import TRANSACTION_STATUS_LABELS
from app.formats.payments import METHOD_LABELS, transaction_id
from app.marks import translatable
from app.models import KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.models.constants import PAYMENT_CURRENCY_CODE
from app.pix import due
from app.services.transactions import charges, payment_listing, payment_stats, payments
from app.services.transactions.charges import Customer, NewCharge
from app.services.transactions.payment_listing import (
    DEFAULT_PAGE_LIMIT,
    ListedPayment,
    PaymentQuery,
)
from app.services.transactions.payments import NewPayment

STATUSES = tuple(status.value for status in TransactionStatus)
# The status filter's options: the codes as values, the labels as what people read.
STATUS_LABELS = {status.value: TRANSACTION_STATUS_LABELS[status] for status in TransactionStatus}
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
    "due_date",
    "due_last_payable_date",
    "due_original_amount",
    "due_amount_today",
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
CHARGE_FIELD_FOR_PARAM = {
    "amount": "amount",
    "description": "description",
    "expires_in": "expires_in",
    "customer.name": "customer_name",
    "customer.document": "customer_document",
    "expected_payer_tax_id": "expected_payer_tax_id",
    "due.date": "due_date",
    "due.days_valid_after": "days_valid_after",
    **{
        f"due.{rule}.{part}": f"{rule}_{part}"
        for rule in ("fine", "interest", "rebate")
        for part in ("type", "value")
    },
    # the form has one discount: a daily one (`due.discounts`) or one dated tier
    "due.discounts": "discount_type",
    "due.discounts.type": "discount_type",
    "due.discounts.value": "discount_value",
    "due.discounts.0.type": "discount_type",
    "due.discounts.0.value": "discount_value",
    "due.discounts.0.until": "discount_until",
}


@dataclass(frozen=True)
class PaymentFilters(QueryFilters):
    """The list's query string: every link (mode, pages, the CSV export) keeps the others.
    `startDate` and `endDate` are calendar days in the account's zone, both inclusive."""

    OMITTED_AT_DEFAULT = ("page", "limit")

    mode: str = "test"
    status: str | None = None
    method: str | None = None
    startDate: str | None = None  # noqa: N815 (the API's query names)
    endDate: str | None = None  # noqa: N815
    dueFrom: str | None = None  # noqa: N815 (charges with a due date, São Paulo days)
    dueUntil: str | None = None  # noqa: N815
    q: str | None = None
    limit: int = DEFAULT_PAGE_LIMIT
    page: int = 1

    @property
    def filtered(self) -> bool:
        days = (self.startDate, self.endDate, self.dueFrom, self.dueUntil)
        return bool(self.status or self.method or any(days) or self.q)

    def query(self, **changes) -> PaymentQuery:
        """The service's query for these filters (newest first), with `changes` applied."""
        start, stop = day_bounds(self.startDate, self.endDate)
        query = PaymentQuery(
            page=self.page,
            limit=self.limit,
            status=TransactionStatus(self.status) if self.status else None,
            method=self.method,
            start=start,
            end=stop - timedelta(microseconds=1) if stop else None,  # the list's end is included
            search=self.q,
            due_from=date.fromisoformat(self.dueFrom) if self.dueFrom else None,
            due_until=date.fromisoformat(self.dueUntil) if self.dueUntil else None,
        )
        return replace(query, **changes)


@bp.get("/payments")
@member_required
def payments_page() -> ResponseReturnValue:
    """One page of the mode's transactions, newest first; test mode offers the test forms.
    Days that cannot filter are shown back beside their fields, the list unfiltered by day."""
    days, due_days = day_range_arg("startDate", "endDate"), day_range_arg("dueFrom", "dueUntil")
    status = 400 if days.problems or due_days.problems else 200
    return _list_page(_filters(days, due_days), days=days, due_days=due_days, status=status)


@bp.post("/payments")
@member_required
def create_test_payment() -> ResponseReturnValue:
    """Test mode only, so any member may: the sandbox moves no money. The provider finalises
    the payment in a job, so the page it lands on says so until the instructions are there."""
    form = TestPaymentForm()
    return _create_test(
        form,
        "payment_form",
        PAYMENT_FIELD_FOR_PARAM,
        lambda: payments.create_payment(g.account_id, KeyMode.TEST, _new_payment(form)).id,
        _("Test payment created. The provider is finalising it."),
    )


@bp.post("/charges")
@member_required
def create_test_charge() -> ResponseReturnValue:
    """A test Pix charge with the `/v1/charges` rules (description, expiry, payer lock)."""
    form = TestChargeForm()
    return _create_test(
        form,
        "charge_form",
        CHARGE_FIELD_FOR_PARAM,
        lambda: charges.create_charge(g.account_id, KeyMode.TEST, _new_charge(form)).id,
        _("Test charge created"),
        id_prefix=CHARGE_ID_PREFIX,
    )


def _create_test(
    form: TestPaymentForm | TestChargeForm,
    form_name: str,
    field_for_param: dict[str, str],
    create: Callable[[], str],
    done: str,
    *,
    id_prefix: str = "",
) -> ResponseReturnValue:
    """A test form on the list (`form_name`'s place): created once, its refusal shown beside
    the field the service names, `done` flashed over the new transaction's page after."""
    filters = PaymentFilters(mode=shown_mode("test"))
    if not form.validate_on_submit():
        return _list_page(filters, **{form_name: form}, status=400)
    try:
        raw_id = submit_once(form, create)
    except ApiError as error:
        show_error(form, error, field_for_param)
        return _list_page(filters, **{form_name: form}, status=error.status)
    flash(done, "info")
    return redirect(
        url_for("dashboard.payment_page", payment_id=id_prefix + raw_id, mode="test"), 303
    )


@bp.get("/payments/export.csv")
@member_required
def payments_csv() -> ResponseReturnValue:
    """The filtered list, every page of it, streamed as it is read (amounts in minor units,
    times in UTC). Rows created after the export started are left out, so the pages it reads
    one after the other never shift under it."""
    filters = _filters(
        DayRange(*date_range_args("startDate", "endDate")),
        DayRange(*date_range_args("dueFrom", "dueUntil")),
    )
    rows = payment_listing.payment_rows(
        g.account_id, MODES[filters.mode], filters.query(), EXPORT_CHUNK
    )
    return csv_response(CSV_COLUMNS, map(_csv_values, rows), f"payments-{filters.mode}.csv")


@bp.get("/payments/stats")
@member_required
def payment_stats_page() -> ResponseReturnValue:
    """Totals, success rate, volume per currency and method, and the daily volume chart."""
    mode, days = mode_arg(), number_arg("days", payment_stats.MAX_DAYS, DEFAULT_STATS_DAYS)
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
        currencies=sorted({*currencies, currency}),
        chart=VolumeChart.build(currency, stats["dailyVolume"]),
        method_labels=METHOD_LABELS,
    )


def _list_page(
    filters: PaymentFilters,
    *,
    days: DayRange | None = None,
    due_days: DayRange | None = None,
    payment_form: TestPaymentForm | None = None,
    charge_form: TestChargeForm | None = None,
    status: int = 200,
) -> tuple[str, int]:
    mode, query = MODES[filters.mode], filters.query()
    rows, total = payment_listing.list_payments(g.account_id, mode, query)
    test_mode = filters.mode == "test"
    html = render_template(
        "dashboard/payments.html",
        filters=filters,
        rows=rows,
        total=total,
        # what a filtered set adds up to; the whole history's is the wallet statement's
        totals=payment_listing.totals(g.account_id, mode, query) if filters.filtered else None,
        last_page=max(1, math.ceil(total / filters.limit)),
        status_labels=STATUS_LABELS,
        public_status=PUBLIC_STATUS,
        method_labels=METHOD_LABELS,
        shown_id=transaction_id,
        csv_args=filters.args(page=1, limit=DEFAULT_PAGE_LIMIT),  # the export is every page
        days=days or DayRange(),
        due_days=due_days or DayRange(),
        amount_due_today=_amount_due_today,
        payment_form=(payment_form or _blank_payment_form()) if test_mode else None,
        charge_form=(charge_form or _blank_charge_form()) if test_mode else None,
    )
    db.session.commit()  # transactions found expired on read
    return html, status


def _csv_values(listed: ListedPayment) -> tuple:
    """One transaction with the status the list shows; free text is guarded against formulas."""
    payment = listed.payment
    return (
        spreadsheet_cell(transaction_id(payment)),
        payment.created_at,
        listed.status,
        Money(payment.amount, payment.currency),
        spreadsheet_cell(payment.currency),
        " ".join(payment.payment_methods),
        payment.paid_with or "",
        Money(payment.provider_fee, payment.currency),
        Money(payment.platform_fee, payment.currency),
        Money(payment.net_amount, payment.currency),
        spreadsheet_cell(payment.customer_name or ""),
        spreadsheet_cell(payment.customer_email or ""),
        spreadsheet_cell(str(payment.metadata_.get("description") or "")),
        payment.paid_at,
        *_due_values(listed),
    )


def _due_values(listed: ListedPayment) -> tuple:
    """A charge with a due date: the date, the last day it takes a Pix, the amount the terms
    apply to, and what it asks today while it can be paid (not once the list shows it
    expired); blanks for any other payment."""
    payment = listed.payment
    if payment.due_terms is None:
        return ("", "", "", "")
    terms = due.from_json(payment.due_terms)
    shown_as_stored = listed.status == payment.status
    return (
        terms.date.isoformat(),
        due.last_payable_day(terms).isoformat(),
        Money(payment.due_original_amount, payment.currency),
        Money(_amount_due_today(payment) if shown_as_stored else None, payment.currency),
    )


def _filters(days: DayRange, due_days: DayRange) -> PaymentFilters:
    return PaymentFilters(
        mode=mode_arg(),
        status=choice_arg("status", STATUSES),
        method=choice_arg("method", payments.METHODS),
        startDate=days.first,
        endDate=days.last,
        dueFrom=due_days.first,
        dueUntil=due_days.last,
        q=search_arg(),
        limit=limit_arg(),
        page=page_arg(),
    )


def _chart_currency(currencies: list[str]) -> str:
    """`currency` from the query string, else the first one with volume, else BRL."""
    asked = (request.args.get("currency") or "").strip().upper()
    if asked and not PAYMENT_CURRENCY_CODE.fullmatch(asked):
        raise InvalidRequest("currency is a currency code, like BRL.", param="currency")
    return asked or (currencies[0] if currencies else payments.DEFAULT_CURRENCY)


def _new_payment(form: TestPaymentForm) -> NewPayment:
    """The test payment form as the service's order."""
    return NewPayment(
        amount=form.amount.data,
        payment_methods=list(form.payment_methods.data),
        currency=form.currency.data.strip().upper(),
        customer_name=form.customer_name.data or None,
        customer_email=form.customer_email.data or None,
        metadata={payments.PHONE_KEY: form.phone.data.strip()} if form.phone.data else {},
    )


def _new_charge(form: TestChargeForm) -> NewCharge:
    """The test charge form as the service's order."""
    return NewCharge(
        amount=form.amount.data,
        description=form.description.data or None,
        expires_in=form.expires_in.data,
        customer=Customer(
            name=form.customer_name.data or None, document=form.customer_document.data or None
        ),
        expected_payer_tax_id=form.expected_payer_tax_id.data or None,
        due=_due_terms(form),
    )


def _due_terms(form: TestChargeForm) -> due.DueTerms | None:
    """The form's due date and its options as the service's terms; none without a date.
    A value is read in reais or as a percentage, as the type chosen beside it says."""
    chosen = [form.fine_type, form.interest_type, form.discount_type, form.rebate_type]
    if form.due_date.data is None:
        if any(field.data for field in chosen):
            raise InvalidRequest(
                translatable("Enter the due date that the fine, interest or discount refer to."),
                param="due.date",
            )
        return None
    discount = _rule(form.discount_type, form.discount_value, "due.discounts.value")
    until = form.discount_until.data
    if discount is not None and discount.type in due.DATED_DISCOUNT_TYPES:
        if until is None:
            raise InvalidRequest(
                translatable("Enter the last day the discount applies."),
                param="due.discounts.0.until",
            )
        discount = (due.DatedDiscount(until, discount.type, discount.value),)
    elif until is not None:
        raise InvalidRequest(
            translatable("Only a discount until a date takes a date: choose one, or clear it."),
            param="due.discounts.0.until",
        )
    elif discount is not None:
        discount = due.DailyDiscount(discount.type, discount.value)
    return due.DueTerms(
        date=form.due_date.data,
        days_valid_after=form.days_valid_after.data or 0,
        fine=_rule(form.fine_type, form.fine_value, "due.fine.value"),
        interest=_interest(form),
        discounts=discount,
        rebate=_rule(form.rebate_type, form.rebate_value, "due.rebate.value"),
    )


def _interest(form: TestChargeForm) -> due.Interest | None:
    rule = _rule(form.interest_type, form.interest_value, "due.interest.value")
    return None if rule is None else due.Interest(rule.type, rule.value)


def _rule(type_field, value_field, param: str) -> due.FixedOrPercent | None:
    """One option of the form: its type, and its value in reais (centavos) or percent; a
    value typed beside no type is refused rather than dropped."""
    if not type_field.data:
        if (value_field.data or "").strip():
            raise InvalidRequest(
                translatable("Choose what this value is, an amount or a percentage, or clear it."),
                param=param.replace(".value", ".type"),
            )
        return None
    text = value_field.data or ""
    try:
        value = to_minor_units(text) if due.is_fixed(type_field.data) else to_percent(text)
    except ValueError as problem:
        raise InvalidRequest(str(problem), param=param) from None
    return due.FixedOrPercent(type_field.data, value)


def _amount_due_today(payment: Transaction) -> int | None:
    """What a charge with a due date asks today while it waits for payment; None otherwise."""
    if payment.paid_at is not None:
        return None
    shown = due.shown_amount_due(payment, utcnow())
    return None if shown is None else shown.total


def _blank_payment_form() -> TestPaymentForm:
    return TestPaymentForm(formdata=None, idempotency_key=new_form_key())


def _blank_charge_form() -> TestChargeForm:
    return TestChargeForm(formdata=None, idempotency_key=new_form_key())
