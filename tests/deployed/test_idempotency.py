"""Idempotent charge creation through the deployed stack: one key sent at once by many
clients, spread over gunicorn's workers and threads, creates one charge; the rest are told
the first is in flight or get its answer, and a later retry replays it. On PostgreSQL (as
`.ci/run` runs it) this drives the claim that commits without waiting for the disk
(docs/decisions.md, Idempotency)."""

import uuid
from concurrent.futures import ThreadPoolExecutor

CLIENTS = 8


def test_one_key_sent_at_once_by_many_clients_creates_one_charge(deployed):
    key = uuid.uuid4().hex
    body = {"amount": 4_321, "payment_method": "pix", "description": f"race {key}"}

    def send(_):
        return deployed.api("POST", "/v1/charges", json=body, headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(send, range(CLIENTS)))

    created = [answer.json() for answer in answers if answer.status_code == 201]
    in_flight = [answer.json() for answer in answers if answer.status_code == 409]
    assert created and len(created) + len(in_flight) == CLIENTS, [a.text for a in answers]
    assert {charge["id"] for charge in created} == {created[0]["id"]}
    assert {e["error"]["code"] for e in in_flight} <= {"idempotency_request_in_progress"}

    retry = send(None)
    assert retry.status_code == 201
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json() == created[0]
    listed = deployed.api("GET", "/v1/charges", params={"limit": 100}).json()["data"]
    assert [c["id"] for c in listed if c["metadata"].get("description") == body["description"]] == [
        created[0]["id"]
    ]
