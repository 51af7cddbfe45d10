"""Creating, finalising and paying transactions through the real `/v1/payments` API."""

import uuid

from tests.support.payouts import run_jobs


def payment_body(**overrides) -> dict:
    body = {
        "amount": 25_000,
        "currency": "BRL",
        "paymentMethods": ["PIX"],
        "customerName": "Ana Souza",
        "customerEmail": "ana@example.com",
        "metadata": {"order": "42"},
        "idempotencyKey": uuid.uuid4().hex,
    }
    body.update(overrides)
    return body


def create(client, api_key: str, **overrides):
    return client.post("/v1/payments", json=payment_body(**overrides), headers={"apikey": api_key})


def created(client, api_key: str, **overrides) -> dict:
    response = create(client, api_key, **overrides)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def finalised(app, redis, client, api_key: str, **overrides) -> dict:
    """Create a payment and run its finalisation job with a real RQ worker; the GET shape."""
    payment = created(client, api_key, **overrides)
    run_jobs(app, redis)
    return get(client, api_key, payment["id"]).get_json()


def get(client, api_key: str, payment_id: str):
    return client.get(f"/v1/payments/{payment_id}", headers={"apikey": api_key})


def pay(client, api_key: str, payment_id: str, **body):
    return client.post(
        f"/v1/sandbox/payments/{payment_id}/pay", json=body, headers={"apikey": api_key}
    )


def paid(app, redis, client, api_key: str, method: str = "PIX", **overrides) -> dict:
    payment = finalised(app, redis, client, api_key, paymentMethods=[method], **overrides)
    response = pay(client, api_key, payment["id"])
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def refund(client, api_key: str, payment_id: str, **body):
    body.setdefault("idempotencyKey", uuid.uuid4().hex)
    return client.post(f"/v1/payments/{payment_id}/refund", json=body, headers={"apikey": api_key})
