"""Statuses as data: one table of allowed moves per kind of object, and one way to move.

Every status that changes (transactions, payouts, refunds, dispute cases, webhook
deliveries) changes only through `StateMachine.move`, which checks the kind's table first;
an illegal move raises, so a bug cannot quietly put an object in a state it may not reach.
"""

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from app.errors import Conflict

ILLEGAL_MOVE = "invalid_status_transition"


@dataclass(frozen=True)
class StateMachine:
    """`transitions[status]` is every status that `status` may become."""

    name: str
    transitions: Mapping[enum.Enum, frozenset]

    def allows(self, current: enum.Enum, to: enum.Enum) -> bool:
        return to in self.transitions.get(current, frozenset())

    def check(self, current: enum.Enum, to: enum.Enum) -> None:
        """Raise 409 `invalid_status_transition` unless `current` may become `to`."""
        if not self.allows(current, to):
            raise Conflict(
                f"A {self.name} in status {current} cannot become {to}.", code=ILLEGAL_MOVE
            )

    def move(self, obj: object, to: enum.Enum, attribute: str = "status") -> enum.Enum:
        """Set `obj.<attribute>` to `to` after checking the table; returns the previous status."""
        previous = getattr(obj, attribute)
        self.check(previous, to)
        setattr(obj, attribute, to)
        return previous
