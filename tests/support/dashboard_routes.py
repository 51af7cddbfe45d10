"""Every dashboard route as data, for the tests that walk `app.url_map`: one merchant account
holding a real object for each path parameter, the request each POST route acts on, and the
database's rows, so a refused post can be shown to have changed nothing."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import sqlalchemy as sa
from flask import url_for

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import DeliveryStatus, KeyMode, PspNoticeKind, Role, WebhookDelivery
from app.services import api_keys, psp_notices
from app.services.webhooks import endpoints as webhook_endpoints
from tests.support import charges, factories
from tests.support import disputes as d
from tests.support.http import bearer, csrf_token, login
from tests.support.payouts import pix_payout
from tests.support.refunds import fund, merchant

PREFIX = "/dashboard"
UNKNOWN_ID = "id_of_nothing"  # for a path parameter no route here names yet
PDF = b"%PDF-1.7\n" + bytes(range(256)) + b"\n%%EOF"
FUNDS = 100_000
HOOK_URL = "http://localhost:9000/hooks"


@dataclass(frozen=True)
class Route:
    endpoint: str
    rule: str
    arguments: frozenset[str]


@dataclass(frozen=True)
class Delivery:
    id: str
    endpoint_id: str


@dataclass(frozen=True)
class WaitingRefund:
    id: str
    payment_id: str


@dataclass(frozen=True)
class Action:
    """What the page sends to act on a route: path values, and a form or the upload script's
    JSON (whose CSRF token travels in the X-CSRFToken header)."""

    values: dict = field(default_factory=dict)
    form: dict = field(default_factory=dict)
    json: dict | None = None


def dashboard_routes(app, method: str | None = None) -> list[Route]:
    """The url map's routes under /dashboard (that answer `method`), in path order."""
    return sorted(
        (
            Route(rule.endpoint, rule.rule, frozenset(rule.arguments))
            for rule in app.url_map.iter_rules()
            if (rule.rule == PREFIX or rule.rule.startswith(PREFIX + "/"))
            and not rule.endpoint.endswith("static")
            and (method is None or method in rule.methods)
        ),
        key=lambda route: route.rule,
    )


class Shop:
    """A fee-free test merchant with money available and, made the first time a route needs
    it, one of each thing a dashboard route acts on, all through the API or the services."""

    def __init__(self, app, monkeypatch, evidence_dir) -> None:
        monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(evidence_dir))
        self.app = app
        self.api = app.test_client()
        self.merchant = merchant(app, monkeypatch)
        self.account_id = self.merchant.account_id
        self._members: dict[Role, factories.Member] = {}
        fund(app, self.api, self.merchant, FUNDS)

    def member(self, role: Role) -> factories.Member:
        """The account's user with this role (one per role)."""
        if role not in self._members:
            self._members[role] = factories.make_member(self.app, self.account_id, role)
        return self._members[role]

    def operator(self) -> factories.Member:
        """Platform staff who is also this account's OWNER: whom every route would obey."""
        staff = factories.make_staff(self.app)
        return factories.make_member(self.app, self.account_id, Role.OWNER, email=staff.email)

    def url(self, route: Route, action: Action) -> str:
        with self.app.test_request_context():
            return url_for(route.endpoint, **action.values, mode="test")  # the sandbox's data

    def action(self, route: Route) -> Action:
        """The POST that acts on `route`; a route not described here gets unknown ids."""
        describe = ACTIONS.get(route.endpoint)
        if describe is None:
            return Action(values=dict.fromkeys(route.arguments, UNKNOWN_ID))
        return describe(self)

    def page(self, route: Route) -> Action:
        """The GET of `route` showing real objects where its parameters name one."""
        return Action(
            values={
                name: PAGE_VALUES[name](self) if name in PAGE_VALUES else UNKNOWN_ID
                for name in route.arguments
            }
        )

    @cached_property
    def key_id(self) -> str:
        with self.app.app_context():
            return api_keys.list_keys(self.account_id)[0].id

    @cached_property
    def waiting_charge(self) -> str:
        return charges.created(self.api, self.merchant.api_key)["id"]

    @cached_property
    def paid_charge(self) -> str:
        return d.paid_charge(self.app, self.api, self.merchant)["id"]

    @cached_property
    def open_case(self) -> str:
        return self._case()

    @cached_property
    def case_under_review(self) -> str:
        """A case whose reported amount differs from its charge's: nothing held yet."""
        return self._case(amount=999)

    @cached_property
    def uploaded_evidence(self) -> str:
        """Evidence of the open case whose file reached the storage, not yet confirmed."""
        ticket = d.ticket(self.api, self.merchant.api_key, self.open_case, PDF).get_json()
        assert d.put_file(self.api, ticket, PDF).status_code == 200
        return ticket["id"]

    @cached_property
    def waiting_refund(self) -> WaitingRefund:
        """A refund waiting for funds: asked while a dispute on a larger unreleased charge
        held more than the wallet had available. The dispute is then won, so the wallet is
        whole again for the other objects; the refund waits for the next funding run."""
        payment_id = charges.raw(self.paid_charge)  # first: paying it releases every tranche
        larger = d.paid_charge(self.app, self.api, self.merchant, amount=2 * FUNDS, released=False)
        case = d.opened(self.api, self.merchant, larger["id"])
        response = self.api.post(
            f"/v1/payments/{payment_id}/refund",
            json={"idempotencyKey": form_key()},
            headers={"apikey": self.merchant.api_key},
        )
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["pendingReason"] == "charge_pending"
        won = d.decide(self.api, self.merchant.api_key, case["id"], "refunded_to_merchant")
        assert won.status_code == 200, won.get_json()
        return WaitingRefund(response.get_json()["id"], payment_id)

    @cached_property
    def endpoint_id(self) -> str:
        with self.app.app_context():
            endpoint, _ = webhook_endpoints.create_endpoint(
                self.account_id, KeyMode.TEST, HOOK_URL, ["charge.created"]
            )
            db.session.commit()
            return endpoint.id

    @cached_property
    def failed_delivery(self) -> Delivery:
        """A dead-lettered delivery to the endpoint, so recovering resends something."""
        endpoint_id = self.endpoint_id
        charges.created(self.api, self.merchant.api_key)
        with self.app.app_context():
            webhook_jobs.relay_events()
            delivery = db.session.scalar(
                sa.select(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint_id)
            )
            delivery.status = DeliveryStatus.FAILED
            db.session.commit()
            return Delivery(delivery.id, endpoint_id)

    @cached_property
    def pending_payout(self) -> str:
        headers = bearer(login(self.api, self.member(Role.OWNER)))
        response = self.api.post("/v1/withdrawals", json=pix_payout(), headers=headers)
        assert response.status_code == 201, response.get_json()
        return response.get_json()["id"]

    @cached_property
    def held_charge(self) -> str:
        """A payer-locked charge paid by a bank that reported no payer document: in review."""
        return charges.held_for_review(self.api, self.merchant.api_key)

    @cached_property
    def psp_notice(self) -> str:
        """A Pix of no charge the live PSP reported, waiting on the back office."""
        with self.app.app_context():
            notice = psp_notices.record(
                PspNoticeKind.UNMATCHED_PIX, "E87654321202611261200abcdefghijk", "no charge"
            )
            db.session.commit()
            return notice.id

    def _case(self, **report) -> str:
        charge = d.paid_charge(self.app, self.api, self.merchant)
        return d.opened(self.api, self.merchant, charge["id"], **report)["id"]


def form_key() -> str:
    """A fresh idempotency key, as a freshly rendered form carries."""
    return uuid.uuid4().hex


PAGE_VALUES: dict[str, Callable[[Shop], str]] = {
    "payment_id": lambda shop: shop.paid_charge,
    "charge_id": lambda shop: shop.paid_charge,
    "case_id": lambda shop: shop.open_case,
    "delivery_id": lambda shop: shop.failed_delivery.id,
}
ACTIONS: dict[str, Callable[[Shop], Action]] = {
    "dashboard.login": lambda shop: Action(
        form={"email": shop.member(Role.MEMBER).email, "password": factories.PASSWORD}
    ),
    "dashboard.logout": lambda shop: Action(),
    "dashboard.choose_account": lambda shop: Action(form={"account_id": shop.account_id}),
    "dashboard.choose_language": lambda shop: Action(form={"locale": "pt_BR"}),
    "dashboard.issue_api_key": lambda shop: Action(form={"label": "ci", "test": "y"}),
    "dashboard.rotate_api_key": lambda shop: Action(values={"key_id": shop.key_id}),
    "dashboard.revoke_api_key": lambda shop: Action(values={"key_id": shop.key_id}),
    "dashboard.create_test_charge": lambda shop: Action(
        form={"amount": "12,34", "idempotency_key": form_key()}
    ),
    "dashboard.create_test_payment": lambda shop: Action(
        form={
            "amount": "12,34",
            "currency": "BRL",
            "payment_methods": "PIX",
            "idempotency_key": form_key(),
        }
    ),
    "dashboard.cancel_payment": lambda shop: Action(
        values={"payment_id": shop.waiting_charge}, form={"idempotency_key": form_key()}
    ),
    "dashboard.refund_payment": lambda shop: Action(
        values={"payment_id": shop.paid_charge},
        form={"strategy": "devolution", "idempotency_key": form_key()},
    ),
    "dashboard.cancel_refund": lambda shop: Action(
        values={
            "payment_id": shop.waiting_refund.payment_id,
            "refund_id": shop.waiting_refund.id,
        },
        form={"idempotency_key": form_key()},
    ),
    "dashboard.appeal_dispute": lambda shop: Action(
        values={"case_id": shop.open_case}, form={"reason": "Produto entregue ao cliente."}
    ),
    "dashboard.accept_dispute": lambda shop: Action(
        values={"case_id": shop.open_case}, form={"understood": "y"}
    ),
    "dashboard.create_evidence_upload": lambda shop: Action(
        values={"case_id": shop.open_case},
        json={"file_name": "receipt.pdf", "file_size": len(PDF), "mime_type": "application/pdf"},
    ),
    "dashboard.complete_evidence_upload": lambda shop: Action(
        values={"case_id": shop.open_case, "evidence_id": shop.uploaded_evidence}, json={}
    ),
    "dashboard.request_pix_payout": lambda shop: Action(
        form={
            "amount": "10,00",
            "pix_key": "ana@example.com",
            "pix_key_type": "EMAIL",
            "mode": "test",
            "idempotency_key": form_key(),
        }
    ),
    "dashboard.cancel_payout": lambda shop: Action(values={"payout_id": shop.pending_payout}),
    "dashboard.add_webhook_endpoint": lambda shop: Action(
        form={"url": "http://localhost:9000/other", "events": "charge.paid"}
    ),
    "dashboard.update_webhook_endpoint": lambda shop: Action(
        values={"endpoint_id": shop.endpoint_id},
        form={"url": "http://localhost:9000/moved", "events": "charge.paid", "status": "ACTIVE"},
    ),
    "dashboard.switch_webhook_endpoint": lambda shop: Action(
        values={"endpoint_id": shop.endpoint_id}, form={"status": "INACTIVE"}
    ),
    "dashboard.rotate_webhook_secret": lambda shop: Action(
        values={"endpoint_id": shop.endpoint_id}
    ),
    "dashboard.delete_webhook_endpoint": lambda shop: Action(
        values={"endpoint_id": shop.endpoint_id}
    ),
    "dashboard.recover_webhook_deliveries": lambda shop: Action(
        values={"endpoint_id": shop.failed_delivery.endpoint_id},
        form={"since": "2020-01-01T00:00"},
    ),
    "dashboard.resend_webhook_delivery": lambda shop: Action(
        values={"delivery_id": shop.failed_delivery.id}
    ),
    "dashboard.resolve_psp_notice": lambda shop: Action(values={"notice_id": shop.psp_notice}),
    "dashboard.release_held_charge": lambda shop: Action(values={"charge_id": shop.held_charge}),
    "dashboard.return_held_charge": lambda shop: Action(values={"charge_id": shop.held_charge}),
    "dashboard.approve_payout": lambda shop: Action(values={"payout_id": shop.pending_payout}),
    "dashboard.reject_payout": lambda shop: Action(
        values={"payout_id": shop.pending_payout}, form={"reason": "Conta suspeita"}
    ),
    "dashboard.open_dispute_case": lambda shop: Action(
        form={
            "charge_id": shop.paid_charge,
            "external_id": "bank-1",
            "type": "med",
            "amount": "",
            "method": "",
            "reason": "",
            "response_deadline": "",
        }
    ),
    "dashboard.request_dispute_evidence": lambda shop: Action(values={"case_id": shop.open_case}),
    "dashboard.decide_dispute": lambda shop: Action(
        values={"case_id": shop.open_case}, form={"decision": "refunded_to_merchant"}
    ),
    "dashboard.confirm_dispute_amount": lambda shop: Action(
        values={"case_id": shop.case_under_review}, form={"amount": "1,00"}
    ),
}


def post(client, shop: Shop, route: Route, action: Action, token: str | None):
    """Send `action` as the page would, with `token` as its CSRF token (None: without one)."""
    url = shop.url(route, action)
    if action.json is not None:
        headers = {"X-CSRFToken": token} if token else {}
        return client.post(url, json=action.json, headers=headers)
    form = {**action.form, "csrf_token": token} if token else action.form
    return client.post(url, data=form)


def page_token(client) -> str:
    """The CSRF token of the client's session, read from a page as the browser has it."""
    signed_in = client.get(f"{PREFIX}/accounts")
    page = signed_in if signed_in.status_code == 200 else client.get(f"{PREFIX}/login")
    return csrf_token(page.get_data(as_text=True))


def database_rows(app) -> dict[str, list[str]]:
    """Every row of every table, so two readings show whether anything was written."""
    with app.app_context():
        rows = {
            table.name: sorted(repr(tuple(row)) for row in db.session.execute(table.select()))
            for table in db.metadata.sorted_tables
        }
        db.session.rollback()
        return rows


def changed_tables(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    return [name for name in after if before.get(name) != after[name]]
