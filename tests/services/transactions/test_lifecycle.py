"""The transaction state machine's event rules, move by move."""

import pytest

from app.extensions import db
from app.models import Event, KeyMode, Origin, Transaction, TransactionStatus
from app.services.transactions import lifecycle
from tests.support import factories

S = TransactionStatus


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ((S.WAITING_PAYMENT,), ["charge.created", "payment.created"]),
        ((S.WAITING_PAYMENT, S.PAID), ["charge.paid", "payment.completed"]),
        ((S.WAITING_PAYMENT, S.PROCESSING, S.APPROVED), ["charge.paid", "payment.completed"]),
        ((S.WAITING_PAYMENT, S.CANCELLED), ["charge.failed", "payment.failed"]),
        ((S.WAITING_PAYMENT, S.EXPIRED), ["charge.expired", "payment.expired", "payment.failed"]),
        ((S.WAITING_PAYMENT, S.PAID, S.DISPUTE), ["payment.failed"]),
        ((S.WAITING_PAYMENT, S.PROCESSING, S.APPROVED, S.CHARGEBACK), ["payment.failed"]),
        ((S.WAITING_PAYMENT, S.PAID, S.REFUNDED), ["payment.refunded"]),
    ],
    ids=["created", "paid", "approved", "cancelled", "expired", "dispute", "chargeback", "refund"],
)
def test_each_move_records_the_contracts_events(app, path, expected):
    with app.app_context():
        transaction = Transaction(
            account_id=factories.make_account(app),
            mode=KeyMode.TEST,
            origin=Origin.PAYMENTS,
            status=S.PENDING,
            amount=1_000,
            currency="BRL",
            payment_methods=["PIX"],
        )
        db.session.add(transaction)
        db.session.flush()
        for status in path[:-1]:
            lifecycle.transition(transaction, status)
        earlier = set(db.session.scalars(db.select(Event.id)))
        lifecycle.transition(transaction, path[-1])
        recorded = [
            event.type for event in db.session.scalars(db.select(Event)) if event.id not in earlier
        ]
        db.session.rollback()
    assert sorted(recorded) == sorted(expected)
