"""`queueing.commit`: a session's work is committed (its transaction, and the jobs asked for
since the last commit), and a session holding neither is left alone."""

from app import queueing
from app.extensions import DEFAULT_QUEUE, db, get_queue
from app.models import Account
from tests.support.transactions import commits_during

JOB = "app.jobs.maintenance.prune_revoked_tokens"


def _commit_count(session) -> int:
    return commits_during(lambda: queueing.commit(session))[1]


def test_a_session_holding_nothing_is_not_committed(app):
    with app.app_context():
        assert _commit_count(db.session()) == 0
        assert not db.session().in_transaction()


def test_jobs_asked_for_with_no_transaction_open_are_enqueued(app, redis):
    with app.app_context():
        queueing.enqueue_after_commit(db.session(), DEFAULT_QUEUE, JOB)
        assert not db.session().in_transaction()
        assert _commit_count(db.session()) == 1
        assert [job.func_name for job in get_queue(DEFAULT_QUEUE).get_jobs()] == [JOB]
        assert _commit_count(db.session()) == 0  # asked once


def test_an_open_transaction_is_committed(app, account_id):
    with app.app_context():
        db.session.get(Account, account_id).name = "Loja Renomeada"
        assert _commit_count(db.session()) == 1
    with app.app_context():
        assert db.session.get(Account, account_id).name == "Loja Renomeada"
