"""Charge expiry: by the `rq cron` job (run by a real RQ worker) and on read."""

from datetime import datetime, timedelta

from rq import SimpleWorker

from app.extensions import get_queue
from app.jobs import charges as charge_jobs
from app.models.base import utcnow
from tests.support import factories, payments
from tests.support.charges import created, event_types, events, get, update_row


def _run_expiry_job(app, redis) -> int:
    with app.app_context():
        queue = get_queue("money")
        job = queue.enqueue(charge_jobs.expire_charges)
        SimpleWorker([queue], connection=redis).work(burst=True)
        job.refresh()
        assert job.get_status() == "finished"
        return job.return_value()


def test_the_job_expires_unpaid_charges_past_their_expiry(app, client, redis):
    key = factories.make_api_key(app, factories.make_account(app))
    overdue = created(client, key, expires_in=120)
    fresh = created(client, key)
    update_row(app, overdue["id"], expires_at=utcnow() - timedelta(seconds=1))

    assert _run_expiry_job(app, redis) == 1
    expired = events(app, overdue["id"])["charge.expired"]["object"]
    assert expired["status"] == "expired"
    failure = expired["metadata"]["failure"]
    assert failure["providerErrorCode"] == "expired"
    assert failure["ttlSeconds"] == 120
    assert failure["reason"]
    assert datetime.fromisoformat(failure["at"]) <= utcnow()
    assert {"charge.expired", "payment.expired", "payment.failed"} <= set(
        event_types(app, overdue["id"])
    )
    assert get(client, key, overdue["id"]).get_json() == expired
    assert get(client, key, fresh["id"]).get_json()["status"] == "pending"
    assert _run_expiry_job(app, redis) == 0  # a second run changes nothing
    assert event_types(app, overdue["id"]).count("charge.expired") == 1


def test_a_read_after_expiry_shows_expired_without_the_job(app, client):
    key = factories.make_api_key(app, factories.make_account(app))
    charge = created(client, key, expires_in=60)
    update_row(app, charge["id"], expires_at=utcnow() - timedelta(seconds=1))
    assert get(client, key, charge["id"]).get_json()["status"] == "expired"
    listed = client.get("/v1/charges", headers={"apikey": key}).get_json()["data"]
    assert listed[0]["status"] == "expired"
    assert event_types(app, charge["id"]).count("charge.expired") == 1


def test_an_expired_payment_without_pix_has_no_qr_lifetime(app, client, redis):
    """`ttlSeconds` is the QR code's lifetime; a boleto payment never had one."""
    key = factories.make_api_key(app, factories.make_account(app))
    boleto = payments.finalised(app, redis, client, key, paymentMethods=["BOLETO"])
    update_row(app, boleto["id"], expires_at=utcnow() - timedelta(seconds=1))
    assert _run_expiry_job(app, redis) == 1
    failure = payments.get(client, key, boleto["id"]).get_json()["metadata"]["failure"]
    assert failure["providerErrorCode"] == "expired" and "ttlSeconds" not in failure
