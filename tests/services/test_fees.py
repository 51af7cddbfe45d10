"""Fee arithmetic: fixed + basis points, rounded half up, never more than the amount."""

import pytest

from app.config import DEFAULT_FEE_SCHEDULE, PAYMENT_METHODS, validate_fee_schedule
from app.services.fees import charge_fees


@pytest.fixture
def schedule(app, monkeypatch):
    def use(provider, platform):
        monkeypatch.setitem(
            app.config,
            "FEE_SCHEDULE",
            {"charges": {"PIX": {"provider": provider, "platform": platform}}},
        )

    return use


@pytest.mark.parametrize(
    ("amount", "provider", "platform"),
    [(10_000, 20, 79), (12_345, 25, 98), (1, 0, 0), (63, 0, 0), (64, 0, 1)],
)
def test_default_schedule(app, amount, provider, platform):
    with app.app_context():
        fees = charge_fees("PIX", amount)
    assert (fees.provider, fees.platform) == (provider, platform)


def test_fees_never_exceed_the_amount(app, schedule):
    schedule({"fixed": 80, "bps": 0}, {"fixed": 50, "bps": 0})
    with app.app_context():
        fees = charge_fees("PIX", 100)
    assert (fees.provider, fees.platform, fees.total) == (80, 20, 100)


@pytest.mark.parametrize(
    "rule",
    [{"fixed": -1, "bps": 0}, {"fixed": 0}, {"fixed": 1.5, "bps": 0}, {"fixed": True, "bps": 1}],
)
def test_a_bad_rule_refuses_to_start(rule):
    with pytest.raises(RuntimeError, match="FEE_SCHEDULE"):
        validate_fee_schedule(
            {"charges": {m: {"provider": rule, "platform": rule} for m in PAYMENT_METHODS}}
        )


@pytest.mark.parametrize(
    "schedule",
    [
        {},
        {"charges": {}},
        {"charges": {"BOLETO": {"provider": {"fixed": 0, "bps": 0}}}},
        {"charges": {"PIX": {"provider": {"fixed": 0, "bps": 20}}}},
        {"charges": {"PIX": DEFAULT_FEE_SCHEDULE["charges"]["PIX"]}},
        {"charges": {"PIX": "0.99%"}},
        [],
    ],
    ids=[
        "empty",
        "no-methods",
        "no-pix",
        "no-platform-rule",
        "only-pix",
        "not-an-object",
        "a-list",
    ],
)
def test_an_incomplete_schedule_refuses_to_start(schedule):
    with pytest.raises(RuntimeError, match="FEE_SCHEDULE"):
        validate_fee_schedule(schedule)
