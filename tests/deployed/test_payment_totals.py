"""The stats' daily totals on the deployed stack (issue 22): a charge made and paid through
gunicorn appends its changes, `rq cron`'s fold job moves them into the totals, and the stats
count it the same before and after the fold."""

import pytest
import sqlalchemy as sa

from tests.support.deployed import new_charge, pay

pytestmark = pytest.mark.slow

FOLD_SECONDS = 15


def _pending_changes(deployed) -> int:
    engine = sa.create_engine(deployed.database_url)
    try:
        with engine.connect() as conn:
            return conn.scalar(sa.text("SELECT count(*) FROM payment_total_changes"))
    finally:
        engine.dispose()


def _stats(deployed) -> dict:
    answer = deployed.api("GET", "/v1/payments/stats?days=1")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_rq_cron_folds_the_changes_and_the_stats_stay_the_same(deployed):
    before = _stats(deployed)
    charge = new_charge(deployed, amount=12_345)
    pay(deployed, charge)
    counted = _stats(deployed)  # folded or not, exact
    assert counted["totalTransactions"] == before["totalTransactions"] + 1
    assert counted["paidTransactions"] == before["paidTransactions"] + 1

    deployed.wait_for(lambda: _pending_changes(deployed) == 0, FOLD_SECONDS, "the fold")
    assert _stats(deployed) == counted
