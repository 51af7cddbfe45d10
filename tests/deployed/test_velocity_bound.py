"""The velocity guard's bound on an account's live charges, on the Procfile stack: kept in
the stack's Redis for every web process, seeded from the database when it is missing (as
after a Redis restart), and brought back down to the count once it would pass the limit."""

import psycopg
import pytest
from redis import Redis

from app.models import KeyMode
from app.services.transactions import fraud
from tests.support.charges import charge_body, raw
from tests.support.deployed import created

pytestmark = [pytest.mark.slow, pytest.mark.postgres]  # COPY_LIVE is PostgreSQL's SQL

LIMIT = 1000  # FRAUD_MAX_LIVE_CHARGES_PER_ACCOUNT, the stack's default
# Live copies of one charge, written around the application (new ids, no Pix location).
COPY_LIVE = """
INSERT INTO transactions
SELECT (jsonb_populate_record(
    NULL::transactions,
    to_jsonb(t) || jsonb_build_object('id', md5(t.id || n::text), 'pix_location_id', NULL)
)).*
FROM transactions t, generate_series(1, %(copies)s) n
WHERE t.id = %(charge_id)s
"""
CANCEL_COPIES = """
UPDATE transactions SET status = 'CANCELLED'
WHERE id IN (SELECT id FROM transactions WHERE account_id = %(account_id)s AND id <> %(charge_id)s
             ORDER BY id LIMIT %(cancelled)s)
"""


def _post(deployed, api_key: str):
    return deployed.api("POST", "/v1/charges", json=charge_body(), headers={"apikey": api_key})


def test_a_lost_bound_is_seeded_from_the_database_and_brought_back_down(deployed):
    account_id, api_key = deployed.new_merchant("Busy Store")
    charge_id = raw(created(_post(deployed, api_key))["id"])
    key = fraud.bound_key(account_id, KeyMode.TEST)
    with Redis.from_url(deployed.redis_url) as redis, psycopg.connect(deployed.database_url) as db:
        assert int(redis.get(key)) == 1  # seeded by the first charge's count
        db.execute(COPY_LIVE, {"copies": LIMIT - 1, "charge_id": charge_id})
        db.commit()
        redis.delete(key)  # Redis restarted without its data

        refused = _post(deployed, api_key)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == fraud.ACCOUNT_VELOCITY
        assert not redis.exists(key)  # a refusal keeps no bound: the next charge counts

        db.execute(
            CANCEL_COPIES, {"account_id": account_id, "charge_id": charge_id, "cancelled": 10}
        )
        db.commit()
        created(_post(deployed, api_key))
        assert int(redis.get(key)) == LIMIT - 10 + 1  # 990 live and this one
        for _ in range(9):  # under the limit by the bound: no count needed
            created(_post(deployed, api_key))
        assert int(redis.get(key)) == LIMIT
        refused = _post(deployed, api_key)  # the bound would pass the limit: counted, 1000 live
        assert refused.status_code == 403, refused.text
