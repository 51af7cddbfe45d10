"""Pix charges in the dashboard: the list with its filters, one charge, and test charges.

Every read and write goes through `app.services.charges`, the functions behind `/v1/charges`,
so the page shows what the API answers and the form obeys the API's rules. Filters live in
the query string so a reload or a shared link shows the same page.
"""

from dataclasses import dataclass

from flask import flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.filters import QueryFilters
from app.dashboard.forms import TestChargeForm
from app.dashboard.session import member_required
from app.dashboard.submit_once import new_form_key, show_error, submit_once
from app.errors import ApiError, InvalidRequest
from app.extensions import db
from app.formats.charges import (
    CHARGE_ID_PREFIX,
    PUBLIC_STATUS,
    PUBLIC_STATUSES,
    charge_fields,
)
from app.models import KeyMode
from app.services import charges
from app.services.charges import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    RESERVED_METADATA_KEYS,
    ChargeQuery,
    Customer,
    NewCharge,
)

MODES = {"test": KeyMode.TEST, "live": KeyMode.LIVE}
# The service names nested fields the API's way; the form names them flat.
FORM_FIELD_FOR_PARAM = {
    "amount": "amount",
    "description": "description",
    "expires_in": "expires_in",
    "customer.name": "customer_name",
    "customer.document": "customer_document",
    "expected_payer_tax_id": "expected_payer_tax_id",
}


@dataclass(frozen=True)
class ListFilters(QueryFilters):
    """The list's query string, so every link (mode, pages) keeps the other filters."""

    OMITTED_AT_DEFAULT = ("limit",)

    mode: str = "test"
    status: str | None = None
    starting_after: str | None = None
    limit: int = DEFAULT_LIST_LIMIT


@bp.get("/charges")
@member_required
def charges_page() -> ResponseReturnValue:
    """One page of charges in one mode; test mode also offers the new test charge form."""
    filters = ListFilters(
        mode=_mode_name(),
        status=_status(),
        starting_after=request.args.get("starting_after") or None,
        limit=_limit(),
    )
    return _list_page(filters, _blank_form())


@bp.get("/charges/<charge_id>")
@member_required
def charge_page(charge_id: str) -> ResponseReturnValue:
    """The public fields of one charge (what the API answers), with its Pix code to share."""
    mode = _mode_name()
    charge = charges.get_charge(g.account_id, MODES[mode], charge_id)
    public = charge_fields(charge)
    page = render_template(
        "dashboard/charge.html",
        mode=mode,
        charge=charge,
        public=public,
        description=charge.metadata_.get("description"),
        failure=charge.metadata_.get("failure"),
        metadata={
            key: value
            for key, value in charge.metadata_.items()
            if key not in RESERVED_METADATA_KEYS
        },
    )
    db.session.commit()  # a charge found expired on read
    return page


@bp.post("/charges")
@member_required
def create_test_charge() -> ResponseReturnValue:
    """Test mode only, so any member may: the sandbox moves no money."""
    form = TestChargeForm()
    if not form.validate_on_submit():
        return _list_page(ListFilters(), form, 400)
    new = _new_charge(form)
    try:
        raw_id = submit_once(
            form, lambda: charges.create_charge(g.account_id, KeyMode.TEST, new).id
        )
    except ApiError as error:
        show_error(form, error, FORM_FIELD_FOR_PARAM)
        return _list_page(ListFilters(), form, error.status)
    flash("Test charge created", "info")
    return redirect(
        url_for("dashboard.charge_page", charge_id=CHARGE_ID_PREFIX + raw_id, mode="test"), 303
    )


def _list_page(filters: ListFilters, form: TestChargeForm, status: int = 200) -> tuple[str, int]:
    page = charges.list_charges(
        g.account_id,
        MODES[filters.mode],
        ChargeQuery(
            limit=filters.limit, starting_after=filters.starting_after, status=filters.status
        ),
    )
    html = render_template(
        "dashboard/charges.html",
        filters=filters,
        page=page,
        statuses=PUBLIC_STATUSES,
        public_status=PUBLIC_STATUS,
        form=form if filters.mode == "test" else None,
    )
    db.session.commit()  # charges found expired on read
    return html, status


def _blank_form() -> TestChargeForm:
    return TestChargeForm(formdata=None, idempotency_key=new_form_key())


def _new_charge(form: TestChargeForm) -> NewCharge:
    return NewCharge(
        amount=form.amount.data,
        description=form.description.data or None,
        expires_in=form.expires_in.data,
        customer=Customer(
            name=form.customer_name.data or None, document=form.customer_document.data or None
        ),
        expected_payer_tax_id=form.expected_payer_tax_id.data or None,
    )


def _mode_name() -> str:
    mode = request.args.get("mode") or "test"
    if mode not in MODES:
        raise InvalidRequest("mode is test or live.", param="mode")
    return mode


def _status() -> str | None:
    status = request.args.get("status") or None
    if status is not None and status not in PUBLIC_STATUSES:
        raise InvalidRequest(
            "status is one of: " + ", ".join(PUBLIC_STATUSES) + ".", param="status"
        )
    return status


def _limit() -> int:
    text = request.args.get("limit") or str(DEFAULT_LIST_LIMIT)
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIST_LIMIT:
        raise InvalidRequest(f"limit is a number from 1 to {MAX_LIST_LIMIT}.", param="limit")
    return int(text)
