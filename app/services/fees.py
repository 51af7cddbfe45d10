"""Fees from the one fee schedule in configuration (`FEE_SCHEDULE`): fixed + basis points.

Computed once, when money settles or a payout is requested, and stored on the record; never
shown on the public charge. Basis points round half up to the centavo; charge fees never
exceed the charge's amount, so a settlement never makes a wallet go down.
"""

from dataclasses import dataclass

from flask import current_app

from app.errors import Unprocessable

BASIS_POINTS = 10_000


@dataclass(frozen=True)
class ChargeFees:
    provider: int
    platform: int

    @property
    def total(self) -> int:
        return self.provider + self.platform


@dataclass(frozen=True)
class FeeRule:
    """A fee of `fixed` minor units plus `bps` basis points of the amount."""

    fixed: int
    bps: int

    @classmethod
    def scheduled(cls, rule: dict) -> "FeeRule":
        return cls(fixed=rule["fixed"], bps=rule["bps"])

    def on(self, amount: int) -> int:
        """The fee on `amount`, its basis points rounded half up to the centavo."""
        return self.fixed + (amount * self.bps + BASIS_POINTS // 2) // BASIS_POINTS


def charge_fees(method: str, amount: int) -> ChargeFees:
    """Provider and platform fee for a settled charge of `amount` paid with `method`."""
    rules = current_app.config["FEE_SCHEDULE"]["charges"].get(method)
    if rules is None:
        raise Unprocessable(f"No fee schedule is configured for {method}.")
    provider = min(FeeRule.scheduled(rules["provider"]).on(amount), amount)
    platform = min(FeeRule.scheduled(rules["platform"]).on(amount), amount - provider)
    return ChargeFees(provider=provider, platform=platform)


def payout_rule(payout_type: str) -> FeeRule:
    """The schedule's rule for payouts of `payout_type`, as the payout form states it."""
    return FeeRule.scheduled(current_app.config["FEE_SCHEDULE"]["payouts"][payout_type])


@dataclass(frozen=True)
class PayoutCost:
    """A payout's fee, and what leaves the wallet for it: the amount and the fee."""

    fee: int
    debit: int


def payout_cost(payout_type: str, amount: int) -> PayoutCost:
    """What a payout of `amount` costs: its fee, on top of the amount (the wallet pays both).
    The request and the form's preview both ask here."""
    fee = payout_rule(payout_type).on(amount)
    return PayoutCost(fee=fee, debit=amount + fee)
