"""Redis down: every API write still answers as usual, quickly, and nothing it recorded is
lost; once Redis is back (empty, as after a restart) the `rq cron` sweeps find the work by
its rows and a real worker delivers each event exactly once."""

import socket
import time
from collections import Counter
from datetime import timedelta

import pytest
import sqlalchemy as sa
from rq import Queue

from app import extensions
from app.extensions import QUEUE_NAMES, db, redis_client
from app.formats.event_catalog import DELIVERABLE
from app.jobs import payouts as payout_jobs
from app.jobs import webhooks as webhook_jobs
from app.models import Event, Payout, PayoutStatus, WebhookDelivery
from app.models.base import utcnow
from app.services.api_rate_limits import REMAINING_HEADER as REMAINING
from app.services.payouts.processing import JOB_GRACE
from tests.support import charges, factories, payouts
from tests.support import disputes as d
from tests.support.http import bearer, login
from tests.support.payments import create as create_payment
from tests.support.payments import refund
from tests.support.processes import wait_for
from tests.support.queues import idle
from tests.support.refunds import Merchant as RefundMerchant
from tests.support.refunds import paid_payment

pytestmark = pytest.mark.slow


def test_every_api_write_succeeds_while_redis_is_down_and_its_events_arrive_once_after(
    app, client, app_redis, redis_server, receiver, workers, monkeypatch
):
    shop = payouts.funded_merchant(app, client, monkeypatch, amount=500_000)
    account_id = shop.member.account_id
    same_shop = RefundMerchant(account_id=account_id, api_key=shop.api_key)
    to_refund = paid_payment(app, app_redis, client, same_shop, amount=20_000)
    disputed = d.paid_charge(app, client, same_shop)
    staff = payouts.staff_headers(app, client)
    _relay_and_deliver(app, app_redis)  # the shop's history, from before it had an endpoint
    endpoint = _post(
        client,
        "/v1/webhooks/endpoints",
        {"apikey": shop.api_key},
        url=receiver.url,
        events=list(DELIVERABLE),
    ).get_json()
    charges.created(client, shop.api_key)
    _relay_and_deliver(app, app_redis)
    before = list(receiver.received)  # charge.created and the legacy payment.created
    retried = before[0].headers["X-Acme-Delivery-Id"]
    outage_began = utcnow()

    redis_server.stop()
    writes = _every_api_write(
        client,
        shop,
        staff,
        receiver.url,
        endpoint["id"],
        retried,
        to_refund,
        disputed,
    )
    unexpected = [
        (what, r.status_code, r.get_data(as_text=True)[:300])
        for what, r, ok in writes
        if r.status_code != ok
    ]
    assert unexpected == []
    assert receiver.received == before

    redis_server.start()  # back, and empty: every job enqueued during the outage is gone
    _let_the_payout_job_grace_pass(app)
    with app.app_context():  # what `rq cron` runs
        assert payout_jobs.sweep_payouts() == 1  # the approved payout, whose job was lost
        webhook_jobs.sweep_webhooks()
    recorded = _events_since(app, outage_began, account_id)
    assert {e.type for e in recorded} >= {"charge.created", "payout.paid", "med_case.created"}
    workers.start()
    expected = len(recorded) + 1  # and the delivery retried by hand during the outage
    wait_for(lambda: len(receiver.received) >= len(before) + expected, 60, "every event's delivery")
    wait_for(lambda: _no_job_left(app_redis), 30, "the workers to finish every job")
    with app.app_context():
        assert webhook_jobs.sweep_webhooks() == 0  # nothing left to send: no duplicate to come
    assert _no_job_left(app_redis)

    delivered = [r.headers["X-Acme-Delivery-Id"] for r in receiver.received[len(before) :]]
    assert len(delivered) == len(set(delivered)) == expected
    assert Counter(_event_ids(app, delivered)) == Counter(
        [*(e.id for e in recorded), *_event_ids(app, [retried])]
    )
    with app.app_context():
        rows = db.session.execute(sa.select(WebhookDelivery.status, WebhookDelivery.attempts))
        assert Counter(rows) == {("DELIVERED", 1): len(before) + expected}


def test_a_hung_redis_costs_a_request_at_most_a_moment(app, client, monkeypatch):
    """A Redis that takes connections and never answers (overloaded, a half-open network):
    the first request gives up after the short timeouts and the next ones do not try it
    again during the pause, so writes keep their normal latency."""
    api_key = factories.make_api_key(app, factories.make_account(app))
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)  # the kernel completes connections; nobody ever reads them
        url = f"redis://127.0.0.1:{hung.getsockname()[1]}/0"
        monkeypatch.setitem(app.config, "REDIS_URL", url)
        monkeypatch.setitem(app.extensions, "acme_redis", redis_client(url))
        started = time.monotonic()
        answers = [charges.create(client, api_key).status_code for _ in range(10)]
        elapsed = time.monotonic() - started
    assert answers == [201] * 10
    assert elapsed < 3, f"10 charges took {elapsed:.1f} s with Redis hung"


def test_requests_use_redis_again_once_it_is_back_and_the_pause_is_over(
    app, client, app_redis, redis_server, monkeypatch
):
    clock = FrozenClock()
    monkeypatch.setattr(extensions, "time", clock)  # the clock of the pause, and only it
    pause = app_redis.connection_pool.connection_class  # holds `down_until`
    api_key = factories.make_api_key(app, factories.make_account(app))

    def limited() -> bool:
        response = client.get("/v1/wallets/balance", headers={"apikey": api_key})
        assert response.status_code == 200
        return REMAINING in response.headers

    assert limited()
    redis_server.stop()
    assert not limited()  # unlimited while Redis is down, rather than refused
    assert pause.down_until == clock.now + extensions.REDIS_OUTAGE_PAUSE_SECONDS
    redis_server.start()
    clock.now = pause.down_until - 0.01
    assert not limited()  # within the pause, Redis is not tried
    clock.now = pause.down_until
    assert limited()  # no restart needed


class FrozenClock:
    """Stands in for the `time` module of `app.extensions`: `monotonic` moves only when the
    test moves it, so how long a restart of Redis takes does not matter."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


def _every_api_write(
    client, shop, staff, receiver_url, endpoint_id, delivered, to_refund, disputed
):
    """One call of each write route family: (what, response, the status it answers when all
    is well)."""
    key = {"apikey": shop.api_key}
    jwt = bearer(login(client, shop.member))
    signed_in = client.post(
        "/v1/auth/login", json={"email": shop.member.email, "password": shop.member.password}
    )
    issued = _post(client, "/v1/api-keys", jwt, label="ci")
    rotated = _post(client, f"/v1/api-keys/{issued.get_json()['id']}/rotate", jwt)
    revoked = client.delete(f"/v1/api-keys/{rotated.get_json()['id']}", headers=jwt)
    writes = [
        ("login", signed_in, 200),
        ("issue api key", issued, 201),
        ("rotate api key", rotated, 201),
        ("revoke api key", revoked, 200),
    ]

    extra = _post(
        client, "/v1/webhooks/endpoints", key, url=f"{receiver_url}?extra", events=["charge.paid"]
    )
    extra_path = f"/v1/webhooks/endpoints/{extra.get_json()['id']}"
    writes += [
        ("add endpoint", extra, 201),
        (
            "change endpoint",
            client.patch(extra_path, json={"events": ["charge.created"]}, headers=key),
            200,
        ),
        ("rotate endpoint secret", _post(client, f"{extra_path}/rotate-secret", key), 200),
        ("delete endpoint", client.delete(extra_path, headers=key), 200),
        (
            "recover endpoint",
            _post(
                client,
                f"/v1/webhooks/endpoints/{endpoint_id}/recover",
                key,
                since=utcnow().isoformat(),
            ),
            200,
        ),
        ("retry delivery", _post(client, f"/v1/webhooks/deliveries/{delivered}/retry", key), 201),
    ]
    charge = charges.create(client, shop.api_key)
    writes += [
        ("create charge", charge, 201),
        ("create pix charge", charges.create(client, shop.api_key, path="/v1/pix/charges"), 201),
        ("pay charge (sandbox)", charges.pay(client, shop.api_key, charge.get_json()["id"]), 200),
    ]
    payment = create_payment(client, shop.api_key)
    writes += [
        ("create payment", payment, 201),
        (
            "cancel payment",
            _post(client, f"/v1/payments/{payment.get_json()['id']}/cancel", key),
            200,
        ),
        ("refund payment", refund(client, shop.api_key, to_refund["id"], amount=1_000), 201),
        (
            "resend payment webhook",
            _post(client, f"/v1/payments/{to_refund['id']}/resend-webhook", key),
            200,
        ),
    ]
    cancelled, approved, rejected = (payouts.request(client, shop) for _ in range(3))
    writes += [
        ("request payout", cancelled, 201),
        (
            "cancel payout",
            _post(client, f"/v1/withdrawals/{cancelled.get_json()['id']}/cancel", shop.headers),
            200,
        ),
        (
            "approve payout",
            _post(client, f"/v1/admin/withdrawals/{approved.get_json()['id']}/approve", staff),
            200,
        ),
        (
            "reject payout",
            _post(
                client,
                f"/v1/admin/withdrawals/{rejected.get_json()['id']}/reject",
                staff,
                reason="KYC",
            ),
            200,
        ),
        (
            "validate pix key",
            _post(
                client,
                "/v1/withdrawals/validate-pix-key",
                jwt,
                key="ana@example.com",
                type="EMAIL",
            ),
            200,
        ),
    ]
    case = d.dispute(client, shop.api_key, disputed["id"])
    writes += [
        ("open dispute (sandbox)", case, 201),
        (
            "accept dispute",
            _post(client, f"/v1/med/cases/{case.get_json()['id']}/accept", key),
            200,
        ),
        ("logout", _post(client, "/v1/auth/logout", jwt), 204),
    ]
    return writes


def _post(client, path: str, headers: dict, **body):
    return client.post(path, json=body, headers=headers)


def _no_job_left(redis) -> bool:
    return idle([Queue(name, connection=redis) for name in QUEUE_NAMES])


def _relay_and_deliver(app, redis) -> None:
    with app.app_context():
        webhook_jobs.relay_events()
    payouts.run_jobs(app, redis)


def _events_since(app, since, account_id: str) -> list[Event]:
    """The deliverable events the account recorded since `since`."""
    with app.app_context():
        return db.session.scalars(
            sa.select(Event).where(
                Event.account_id == account_id,
                Event.created_at >= since,
                Event.type.in_(DELIVERABLE),
            )
        ).all()


def _event_ids(app, delivery_ids: list[str]) -> list[str]:
    """The event each delivery carried (legacy bodies do not name it)."""
    with app.app_context():
        return [db.session.get(WebhookDelivery, i).event_id for i in delivery_ids]


def _let_the_payout_job_grace_pass(app) -> None:
    """Approved payouts look as if approved long enough ago for the sweep to take them."""
    with app.app_context():
        db.session.execute(
            sa.update(Payout)
            .where(Payout.status == PayoutStatus.APPROVED)
            .values(updated_at=utcnow() - JOB_GRACE - timedelta(seconds=1))
        )
        db.session.commit()
