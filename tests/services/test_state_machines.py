"""Every status table, walked move by move, and the rule that nothing else sets a status.

A machine is named by module and attribute and looked up in its own test, so one that is
missing fails by itself instead of hiding the other tables behind an import error.
"""

import ast
import enum
import importlib
from collections.abc import Callable
from itertools import product
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.errors import Conflict
from app.extensions import db
from app.models import (
    DeliveryStatus,
    DisputeStatus,
    EndpointStatus,
    KeyMode,
    Origin,
    Payout,
    PayoutStatus,
    PayoutType,
    RefundStatus,
    Transaction,
    TransactionStatus,
)
from app.services.payouts import lifecycle as payout_lifecycle
from app.services.state_machine import ILLEGAL_MOVE, StateMachine
from app.services.transactions import lifecycle
from tests.support import factories

APP = Path(__file__).resolve().parents[2] / "app"
MOVER = APP / "services" / "state_machine.py"
# `.status` assignments that are not an object's lifecycle status: HTTP status codes.
NOT_LIFECYCLE_STATUSES = frozenset(
    {
        ("errors.py", "error.status"),  # the HTTP status of a translated Werkzeug error
        ("providers/api_pix/problems.py", "self.status"),  # the PSP's HTTP answer status
    }
)

MACHINES = {
    "transaction": (
        "app.services.transactions.lifecycle",
        "TRANSACTION_MACHINE",
        TransactionStatus,
    ),
    "payout": ("app.services.payouts.lifecycle", "PAYOUT_MACHINE", PayoutStatus),
    "refund": ("app.services.transactions.refund_states", "REFUND_MACHINE", RefundStatus),
    "dispute_case": ("app.services.disputes.cases", "CASE_MACHINE", DisputeStatus),
    "webhook_delivery": ("app.services.webhooks.delivery", "DELIVERY_MACHINE", DeliveryStatus),
    "webhook_endpoint": ("app.services.webhooks.endpoints", "ENDPOINT_MACHINE", EndpointStatus),
}


@pytest.mark.parametrize(("module", "attribute", "statuses"), MACHINES.values(), ids=MACHINES)
def test_every_listed_move_works_and_every_other_is_refused(module, attribute, statuses):
    machine: StateMachine = getattr(importlib.import_module(module), attribute)
    listed = {(current, to) for current, targets in machine.transitions.items() for to in targets}
    assert all(isinstance(status, statuses) for move in listed for status in move), listed

    for current, to in product(statuses, repeat=2):
        subject = SimpleNamespace(status=current)
        if (current, to) in listed:
            assert machine.move(subject, to) is current
            assert subject.status is to
        else:
            with pytest.raises(Conflict) as refused:
                machine.move(subject, to)
            assert refused.value.code == ILLEGAL_MOVE, (current, to)
            assert subject.status is current


def test_a_transaction_row_refuses_an_illegal_move(app):
    with app.app_context():
        paid = Transaction(
            account_id=factories.make_account(app),
            mode=KeyMode.TEST,
            origin=Origin.PAYMENTS,
            status=TransactionStatus.PAID,
            amount=1_000,
            currency="BRL",
            payment_methods=["PIX"],
        )
        _assert_refused(paid, lifecycle.transition, TransactionStatus.PENDING)


def test_a_payout_row_refuses_an_illegal_move(app):
    with app.app_context():
        completed = Payout(
            account_id=factories.make_account(app),
            mode=KeyMode.TEST,
            status=PayoutStatus.COMPLETED,
            type=PayoutType.PIX,
            amount=10_000,
            fee=0,
            currency="BRL",
        )
        _assert_refused(completed, payout_lifecycle.transition, PayoutStatus.PROCESSING)


def test_no_module_sets_a_status_but_the_state_machine():
    offenders = [
        f"{path.relative_to(APP)}:{line}: {target}"
        for path in sorted(APP.rglob("*.py"))
        if path != MOVER
        for line, target in _status_assignments(path)
        if (path.relative_to(APP).as_posix(), target) not in NOT_LIFECYCLE_STATUSES
    ]
    assert not offenders, "set outside a StateMachine:\n" + "\n".join(offenders)


def _assert_refused(
    row: Transaction | Payout, transition: Callable[[Any, Any], None], to: enum.Enum
) -> None:
    db.session.add(row)
    db.session.flush()
    before = row.status
    with pytest.raises(Conflict) as refused:
        transition(row, to)
    assert (refused.value.status, refused.value.code) == (409, ILLEGAL_MOVE)
    assert row.status is before
    db.session.rollback()


def _status_assignments(path: Path) -> list[tuple[int, str]]:
    """`x.status = …` in any form (inside a tuple, augmented, annotated) and
    `setattr(x, "status", …)`; a class attribute `status: Mapped[…] = …` is a declaration."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if _is_status_setattr(node):
            found.append((node.lineno, f'setattr({ast.unparse(node.args[0])}, "status", …)'))
        found += [
            (node.lineno, ast.unparse(target))
            for target in _assigned(node)
            if isinstance(target, ast.Attribute) and target.attr == "status"
        ]
    return found


def _assigned(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in _flattened(target)]
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return _flattened(node.target)
    return []


def _flattened(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _flattened(element)]
    if isinstance(target, ast.Starred):
        return _flattened(target.value)
    return [target]


def _is_status_setattr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "status"
    )
