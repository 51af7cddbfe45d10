"""How a merchant hears about a dispute: signed webhooks delivered by a real RQ worker to a
receiver, and e-mail to the account's OWNERs and ADMINs when a case opens and when it is
resolved, retried by the `rq cron` sweep when the mail server fails."""

import email
import hashlib
import hmac
import json
from email.policy import default as default_policy

import pytest

from app.config import instance_path
from app.extensions import db
from app.jobs import disputes as dispute_jobs
from app.models import Role
from app.services import mail
from tests.support import disputes as d
from tests.support import factories
from tests.support.payouts import run_jobs

DISPUTE_EVENTS = ["med_case.created", "med_case.updated", "med.resolved"]


@pytest.fixture
def mailbox(app, monkeypatch):
    monkeypatch.setitem(app.config, "MAIL_BACKEND", "file")
    folder = instance_path() / "mail"
    for old in folder.glob("*.eml"):
        old.unlink()
    return folder


def _mails(folder) -> list[str]:
    """Each e-mail as its recipients, subject and body, decoded (Portuguese is not ASCII)."""
    messages = (
        email.message_from_bytes(m.read_bytes(), policy=default_policy)
        for m in folder.glob("*.eml")
    )
    return sorted(f"{m['To']}\n{m['Subject']}\n\n{m.get_content()}" for m in messages)


def _signed(header: str, body: bytes, secret: str) -> bool:
    parts = dict(item.split("=", 1) for item in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(parts["v1"], expected.hexdigest())


def test_dispute_events_reach_the_merchant_signed(app, redis, client, shop, receiver):
    endpoint = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": [*DISPUTE_EVENTS, "charge.failed"]},
        headers={"apikey": shop.api_key},
    ).get_json()
    charge = d.paid_charge(app, client, shop)
    case = d.opened(client, shop, charge["id"])
    path = f"/v1/med/cases/{case['id']}/appeal"
    d.call(client, shop.api_key, "POST", path, json={"reason": "Contesto"})
    d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    run_jobs(app, redis)

    # Deliveries to one endpoint may overlap (WEBHOOK_ENDPOINT_CONCURRENCY), so they may
    # arrive in any order; each event's created_at orders them.
    received = sorted(
        ((r.headers["X-Acme-Event-Type"], r) for r in receiver.received),
        key=lambda named: json.loads(named[1].body)["created_at"],
    )
    assert [name for name, _ in received] == [
        "med_case.created",
        "med_case.updated",
        "med_case.updated",
        "med.resolved",
    ]
    for _, request in received:
        assert _signed(request.headers["X-Acme-Signature"], request.body, endpoint["secret"])
    envelopes = [json.loads(request.body) for _, request in received]
    assert all(e["object"] == "event" and e["id"].startswith("evt_") for e in envelopes)
    assert envelopes[0]["data"]["object"]["status"] == "open"
    assert envelopes[0]["data"]["object"]["response_deadline"] == case["response_deadline"]
    assert [e["data"]["object"]["status"] for e in envelopes[1:3]] == ["appealed", "closed"]
    assert envelopes[3]["data"]["money_outcome"] == "refunded_to_merchant"
    final = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    assert envelopes[3]["data"]["object"] == final


def test_owners_and_admins_are_emailed_when_a_case_opens_and_resolves(
    app, redis, client, shop, mailbox
):
    owner = factories.make_member(app, shop.account_id, Role.OWNER)
    factories.make_member(app, shop.account_id, Role.MEMBER)
    charge = d.paid_charge(app, client, shop)
    case = d.opened(client, shop, charge["id"])
    run_jobs(app, redis)
    (opened,) = _mails(mailbox)
    assert owner.email in opened and "member-" not in opened
    # in the Brazilian account's language (`app.i18n.account_locale`), money included
    assert f"Acme Pay: contestação {case['id']} aberta" in opened
    assert "R$\u00a0" in opened and "fica retido na sua carteira" in opened
    assert "(MED, R$" in opened  # the dispute's type as a word: MED is its name in Portuguese

    d.decide(client, shop.api_key, case["id"], "rejected")
    run_jobs(app, redis)
    mails = _mails(mailbox)
    assert len(mails) == 2
    assert any(f"contestação {case['id']} rejeitada" in m and "(Perdida)" in m for m in mails)
    with app.app_context():
        assert dispute_jobs.sweep_dispute_notices() == 0  # nothing left to send


def test_a_failed_mail_is_sent_by_the_sweep(app, redis, client, shop, mailbox, monkeypatch):
    factories.make_member(app, shop.account_id, Role.OWNER)
    charge = d.paid_charge(app, client, shop)
    real_send = mail.send

    def smtp_down(*args, **kwargs):
        raise ConnectionRefusedError("smtp down")

    monkeypatch.setattr(mail, "send", smtp_down)
    case = d.opened(client, shop, charge["id"])
    with app.app_context():
        assert dispute_jobs.sweep_dispute_notices() == 0  # a minute for the case's own job
    d.update_case(app, case["id"], created_at=d.past(minutes=2))
    with app.app_context():
        assert dispute_jobs.sweep_dispute_notices() == 1  # tried, failed, kept for later
        db.session.rollback()
    assert _mails(mailbox) == []
    assert d.case_row(app, case["id"]).opened_notice_sent_at is None

    monkeypatch.setattr(mail, "send", real_send)
    with app.app_context():
        assert dispute_jobs.sweep_dispute_notices() == 1
        assert dispute_jobs.sweep_dispute_notices() == 0
    assert len(_mails(mailbox)) == 1
    assert d.case_row(app, case["id"]).opened_notice_sent_at is not None
