"""Charges with a due date: prorrogation, the amount on a day, the rules between the terms.

The amounts are worked out by hand from the rules in `app.pix.due`; the business-day
examples are the standard's own (API Pix 2.9.0, `CobDataDeVencimento`, examples A to G).
"""

import itertools
import json
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from app.business_days import SAO_PAULO
from app.pix.brcode import MAX_AMOUNT
from app.pix.due import (
    DAILY_DISCOUNT_TYPES,
    DATED_DISCOUNT_TYPES,
    FINE_TYPES,
    INTEREST_TYPES,
    MAX_DATED_DISCOUNTS,
    MAX_DAYS_AHEAD,
    MAX_DAYS_VALID_AFTER,
    REBATE_TYPES,
    AmountDue,
    DailyDiscount,
    DatedDiscount,
    DueTerms,
    FixedOrPercent,
    Interest,
    amount_due,
    effective_due_date,
    from_json,
    last_payable_day,
    payable_on,
    payable_until,
    problems,
    to_json,
)

DUE = date(2024, 6, 14)  # a Friday, a business day
TODAY = date(2024, 6, 1)
FINE_2 = FixedOrPercent("percent", Decimal("2"))
MONTHLY_1 = Interest("percent_month", Decimal("1"))


def terms(**fields) -> DueTerms:
    return DueTerms(**{"date": DUE, **fields})


# --- Business days: the standard's examples ---------------------------------------------------

STANDARD_EXAMPLES = [
    # dataDeVencimento, validadeAposVencimento, last day accepted (the next one is refused)
    pytest.param(date(2020, 10, 20), 4, date(2020, 10, 26), id="A: +4 lands on Saturday"),
    pytest.param(date(2020, 12, 25), 0, date(2020, 12, 28), id="B: Christmas, prorrogated"),
    pytest.param(date(2020, 12, 25), 1, date(2020, 12, 29), id="C"),
    pytest.param(date(2020, 12, 25), 3, date(2020, 12, 31), id="D"),
    pytest.param(date(2020, 12, 25), 4, date(2021, 1, 4), id="E: +4 lands on New Year"),
    pytest.param(date(2021, 8, 27), 5, date(2021, 9, 1), id="F: weekend days count"),
    pytest.param(date(2021, 8, 28), 5, date(2021, 9, 6), id="G: Saturday due date"),
]


@pytest.mark.parametrize(("due_date", "days_valid_after", "last_day"), STANDARD_EXAMPLES)
def test_last_payable_day_follows_the_standards_examples(due_date, days_valid_after, last_day):
    charge = DueTerms(due_date, days_valid_after)

    assert last_payable_day(charge) == last_day
    assert payable_on(charge, last_day)
    assert not payable_on(charge, last_day + timedelta(days=1))


def test_paying_early_is_always_allowed():
    assert payable_on(DueTerms(date(2020, 12, 25)), date(2020, 1, 1))


@pytest.mark.parametrize(
    ("due_date", "effective"),
    [
        (DUE, DUE),
        (date(2024, 6, 15), date(2024, 6, 17)),  # Saturday → Monday
        (date(2020, 12, 25), date(2020, 12, 28)),  # Christmas on a Friday → Monday
        (date(2021, 1, 31), date(2021, 2, 1)),  # Sunday → Monday, across the month end
    ],
)
def test_a_due_date_on_a_day_off_moves_to_the_next_business_day(due_date, effective):
    assert effective_due_date(DueTerms(due_date)) == effective


def test_payable_until_the_last_payable_day_ends_in_sao_paulo():
    # Example A: payable through Monday 2020-10-26, so until Tuesday 00:00 in São Paulo.
    until = payable_until(DueTerms(date(2020, 10, 20), 4))

    assert until == datetime(2020, 10, 27, tzinfo=SAO_PAULO)


# --- The amount on a day ----------------------------------------------------------------------

AMOUNTS = [
    # original, terms, day paid, (rebate, discount, fine, interest, total)
    # Late on a business-day due date: 2024-06-24 is 10 days after 2024-06-14.
    pytest.param(
        50_000,
        terms(fine=FINE_2, interest=MONTHLY_1),
        date(2024, 6, 24),
        (0, 0, 1_000, 167, 51_167),  # fine 50000 x 2 % = 1000; 50000 x 1 % / 30 x 10 = 166.67
        id="percent a month",
    ),
    pytest.param(
        50_000,
        terms(interest=Interest("fixed_day", 25)),
        date(2024, 6, 24),
        (0, 0, 0, 250, 50_250),  # 25 x 10
        id="fixed a day",
    ),
    pytest.param(
        50_000,
        terms(interest=Interest("percent_day", Decimal("0.03"))),
        date(2024, 6, 24),
        (0, 0, 0, 150, 50_150),  # 50000 x 0.03 % x 10
        id="percent a day",
    ),
    pytest.param(
        50_000,
        terms(interest=Interest("percent_year", Decimal("12"))),
        date(2024, 6, 24),
        (0, 0, 0, 164, 50_164),  # 50000 x 12 % / 365 x 10 = 164.38
        id="percent a year",
    ),
    # Fines: once, from the first day late, whatever else the terms say.
    pytest.param(
        50_000,
        terms(fine=FixedOrPercent("fixed", 1_500)),
        date(2024, 6, 15),
        (0, 0, 1_500, 0, 51_500),
        id="fixed fine",
    ),
    pytest.param(
        50_000,
        terms(fine=FINE_2),
        date(2024, 6, 15),
        (0, 0, 1_000, 0, 51_000),  # 50000 x 2 %
        id="percent fine",
    ),
    pytest.param(
        50_000,
        terms(fine=FINE_2, interest=MONTHLY_1),
        DUE,
        (0, 0, 0, 0, 50_000),
        id="on the due date: no fine, no interest",
    ),
    # Rebates: always, and fine and interest stay percentages of the original.
    pytest.param(
        50_000,
        terms(rebate=FixedOrPercent("fixed", 2_000)),
        DUE,
        (2_000, 0, 0, 0, 48_000),
        id="fixed rebate",
    ),
    pytest.param(
        50_000,
        terms(rebate=FixedOrPercent("percent", Decimal("10"))),
        date(2024, 5, 1),
        (5_000, 0, 0, 0, 45_000),  # 50000 x 10 %
        id="percent rebate",
    ),
    pytest.param(
        50_000,
        terms(rebate=FixedOrPercent("fixed", 2_000), fine=FINE_2, interest=MONTHLY_1),
        date(2024, 6, 24),
        (2_000, 0, 1_000, 167, 49_167),  # 50000 - 2000 + 1000 + 167
        id="rebate when late",
    ),
    # Daily discounts: each calendar day before the (prorrogated) due date.
    pytest.param(
        50_000,
        terms(discounts=DailyDiscount("fixed_day", 100)),
        date(2024, 6, 10),
        (0, 400, 0, 0, 49_600),  # 4 days early x 100
        id="fixed a day early",
    ),
    pytest.param(
        20_000,
        terms(discounts=DailyDiscount("percent_day", Decimal("0.5"))),
        date(2024, 6, 4),
        (0, 1_000, 0, 0, 19_000),  # 20000 x 0.5 % x 10 days early
        id="percent a day early",
    ),
    pytest.param(
        50_000,
        terms(discounts=DailyDiscount("fixed_day", 100)),
        DUE,
        (0, 0, 0, 0, 50_000),
        id="no daily discount on the due date",
    ),
    pytest.param(
        50_000,
        terms(date=date(2024, 6, 15), discounts=DailyDiscount("fixed_day", 100)),
        date(2024, 6, 14),
        (0, 300, 0, 0, 49_700),  # Friday is 3 days before Monday, the prorrogated date
        id="daily discount counts to the prorrogated due date",
    ),
    pytest.param(
        50_000,
        terms(date=date(2024, 6, 15), discounts=DailyDiscount("fixed_day", 100)),
        date(2024, 6, 17),
        (0, 0, 0, 0, 50_000),
        id="no daily discount on the prorrogated day",
    ),
    # The discount stops where 1 centavo is left to pay.
    pytest.param(
        1_000,
        terms(rebate=FixedOrPercent("fixed", 300), discounts=DailyDiscount("fixed_day", 100)),
        date(2024, 5, 15),
        (300, 699, 0, 0, 1),  # 30 days x 100 = 3000, capped at 1000 - 300 - 1
        id="capped at 1 centavo",
    ),
    # A due date on a day off: on time through the next business day, late from the day after,
    # interest counted from the prorrogated date.
    pytest.param(
        30_000,
        terms(date=date(2024, 6, 15), fine=FINE_2, interest=MONTHLY_1),
        date(2024, 6, 17),
        (0, 0, 0, 0, 30_000),
        id="Saturday due date paid on Monday",
    ),
    pytest.param(
        30_000,
        terms(date=date(2024, 6, 15), fine=FINE_2, interest=MONTHLY_1),
        date(2024, 6, 18),
        (0, 0, 600, 10, 30_610),  # 30000 x 2 %; 30000 x 1 % / 30 x 1 day
        id="Saturday due date paid on Tuesday",
    ),
    pytest.param(
        30_000,
        terms(date=date(2020, 12, 25), fine=FINE_2, interest=MONTHLY_1),
        date(2020, 12, 28),
        (0, 0, 0, 0, 30_000),
        id="Christmas due date paid on Monday",
    ),
    pytest.param(
        30_000,
        terms(date=date(2020, 12, 25), fine=FINE_2, interest=MONTHLY_1),
        date(2020, 12, 29),
        (0, 0, 600, 10, 30_610),  # as on Tuesday above: 1 day after Monday 12-28
        id="Christmas due date paid on Tuesday",
    ),
    # Month ends: Sunday 2021-01-31 becomes Monday 02-01; 2021-03-01 is 28 days later.
    pytest.param(
        100_000,
        terms(date=date(2021, 1, 31), fine=FINE_2, interest=Interest("percent_month", 3)),
        date(2021, 2, 1),
        (0, 0, 0, 0, 100_000),
        id="month end, on time",
    ),
    pytest.param(
        100_000,
        terms(date=date(2021, 1, 31), fine=FINE_2, interest=Interest("percent_month", 3)),
        date(2021, 3, 1),
        (0, 0, 2_000, 2_800, 104_800),  # 100000 x 2 %; 100000 x 3 % / 30 x 28 days
        id="month end, across February",
    ),
    # Half a centavo rounds up, once per part.
    pytest.param(
        10_050,
        terms(fine=FixedOrPercent("percent", Decimal("1"))),
        date(2024, 6, 15),
        (0, 0, 101, 0, 10_151),  # 10050 x 1 % = 100.5 → 101 (half-even would say 100)
        id="half up",
    ),
    pytest.param(
        30_100,
        terms(interest=MONTHLY_1),
        date(2024, 6, 29),
        (0, 0, 0, 151, 30_251),  # 30100 x 1 % / 30 x 15 = 150.5 → 151; by day 10.03 → 10 x 15
        id="interest rounded over all days",
    ),
    pytest.param(
        1_020,
        terms(rebate=FixedOrPercent("percent", Decimal("2.5"))),
        DUE,
        (26, 0, 0, 0, 994),  # 1020 x 2.5 % = 25.5 → 26
        id="half up rebate",
    ),
]


@pytest.mark.parametrize(("original", "charge", "day", "parts"), AMOUNTS)
def test_amount_due(original, charge, day, parts):
    rebate, discount, fine, interest, total = parts

    assert amount_due(original, charge, day) == AmountDue(
        original, rebate, discount, fine, interest, total, day
    )


TIERS = (
    DatedDiscount(date(2024, 6, 14), "percent", Decimal("1")),
    DatedDiscount(date(2024, 6, 1), "percent", Decimal("10")),
    DatedDiscount(date(2024, 6, 10), "fixed", 1_000),
)
TIER_DISCOUNTS = [
    # day paid, discount on 50000: the largest tier whose `until` has not passed
    (date(2024, 5, 20), 5_000),  # until 06-01: 10 %
    (date(2024, 6, 1), 5_000),  # `until` is inclusive
    (date(2024, 6, 2), 1_000),  # until 06-10: fixed
    (date(2024, 6, 10), 1_000),
    (date(2024, 6, 11), 500),  # until 06-14: 1 %
    (DUE, 500),
    (date(2024, 6, 17), 0),  # late: no tier left
]


@pytest.mark.parametrize("order", list(itertools.permutations(TIERS)), ids=str)
@pytest.mark.parametrize(("day", "discount"), TIER_DISCOUNTS)
def test_dated_discounts_are_tiers_in_any_order(order, day, discount):
    paid = amount_due(50_000, terms(discounts=order), day)

    assert (paid.discount, paid.total) == (discount, 50_000 - discount)


def test_a_dated_discount_until_a_day_off_due_date_lasts_until_the_prorrogated_one():
    # due Saturday 2024-06-15, prorrogated to Monday the 17th: "until the due date" moves too
    saturday = terms(
        date=date(2024, 6, 15), discounts=(DatedDiscount(date(2024, 6, 15), "fixed", 700),)
    )

    assert amount_due(50_000, saturday, date(2024, 6, 17)).discount == 700
    assert amount_due(50_000, saturday, date(2024, 6, 18)).discount == 0


def test_dated_discounts_of_two_types_are_refused():
    # the standard gives all the tiers one modalidade
    mixed = terms(
        discounts=(
            DatedDiscount(date(2024, 6, 5), "percent", Decimal("10")),
            DatedDiscount(date(2024, 6, 10), "fixed", 1_000),
        )
    )

    assert [problem.param for problem in problems(50_000, mixed, TODAY)] == ["due.discounts.1.type"]


def test_a_bigger_later_tier_still_applies_to_an_earlier_payment():
    # 100 until 06-10, 500 until 06-14: paying on 06-05 must not cost more than on 06-14
    order = (
        DatedDiscount(date(2024, 6, 10), "fixed", 100),
        DatedDiscount(date(2024, 6, 14), "fixed", 500),
    )
    early = amount_due(50_000, terms(discounts=order), date(2024, 6, 5))
    later = amount_due(50_000, terms(discounts=order), date(2024, 6, 14))

    assert early.discount == later.discount == 500


# --- Rules between the values -----------------------------------------------------------------

VALID = terms(
    days_valid_after=30,
    fine=FINE_2,
    interest=MONTHLY_1,
    discounts=(
        DatedDiscount(date(2024, 6, 10), "percent", Decimal("5")),  # 2500 on 50000
        DatedDiscount(date(2024, 6, 5), "percent", Decimal("10")),  # 5000
    ),
    rebate=FixedOrPercent("fixed", 44_999),  # + the largest discount leaves 1 centavo
)


@pytest.mark.parametrize(
    "charge",
    [
        pytest.param(VALID, id="every field"),
        pytest.param(DueTerms(TODAY), id="a due date alone"),
        pytest.param(replace(VALID, days_valid_after=MAX_DAYS_VALID_AFTER), id="90 days after"),
        pytest.param(replace(VALID, fine=FixedOrPercent("percent", 2)), id="whole percent"),
        pytest.param(
            replace(VALID, fine=FixedOrPercent("percent", Decimal("99.99"))), id="99.99 %"
        ),
        pytest.param(
            replace(VALID, fine=FixedOrPercent("percent", Decimal("2.500"))), id="2.500 %"
        ),
        pytest.param(
            replace(
                VALID, discounts=(DatedDiscount(TODAY, "fixed", 2), DatedDiscount(DUE, "fixed", 1))
            ),
            id="discounts until today and until the due date",
        ),
        pytest.param(
            replace(VALID, discounts=DailyDiscount("percent_day", Decimal("0.33"))),
            id="daily discount",
        ),
    ],
)
def test_valid_terms_have_no_problems(charge):
    assert problems(50_000, charge, TODAY) == []


def dated(*discounts: DatedDiscount) -> DueTerms:
    return replace(VALID, discounts=discounts, rebate=None)


def rule(charge: DueTerms, param: str, why: str):
    return pytest.param(charge, param, id=why)


PROBLEMS = [
    # terms (original 50000, today 2024-06-01), the field at fault, the rule
    rule(replace(VALID, date=date(2024, 5, 31), discounts=None), "due.date", "date in the past"),
    rule(replace(VALID, days_valid_after=-1), "due.days_valid_after", "negative days after"),
    rule(replace(VALID, days_valid_after=91), "due.days_valid_after", "over 90 days after"),
    rule(replace(VALID, fine=FixedOrPercent("percent_day", 2)), "due.fine.type", "type not for it"),
    rule(replace(VALID, fine=FixedOrPercent("fixed", 0)), "due.fine.value", "fixed zero"),
    rule(
        replace(VALID, fine=FixedOrPercent("fixed", Decimal("1.5"))),
        "due.fine.value",
        "fixed not whole centavos",
    ),
    rule(replace(VALID, fine=FixedOrPercent("fixed", True)), "due.fine.value", "not a number"),
    rule(replace(VALID, fine=FixedOrPercent("percent", 100)), "due.fine.value", "100 %"),
    rule(replace(VALID, fine=FixedOrPercent("percent", 0)), "due.fine.value", "0 %"),
    rule(replace(VALID, fine=FixedOrPercent("percent", Decimal("NaN"))), "due.fine.value", "NaN %"),
    rule(
        replace(VALID, interest=Interest("percent", 1)),
        "due.interest.type",
        "interest type not for it",
    ),
    rule(
        replace(VALID, interest=Interest("percent_day", Decimal("0.125"))),
        "due.interest.value",
        "3 decimal places",
    ),
    rule(
        replace(VALID, interest=Interest("fixed_day", -5)),
        "due.interest.value",
        "negative fixed interest",
    ),
    rule(dated(), "due.discounts", "no dated discount"),
    rule(
        dated(
            *[
                DatedDiscount(DUE - timedelta(days=n), "fixed", 1)
                for n in range(MAX_DATED_DISCOUNTS + 1)
            ]
        ),
        "due.discounts",
        "4 dated discounts",
    ),
    rule(
        dated(DatedDiscount(DUE, "fixed", 1), DatedDiscount(date(2024, 6, 17), "fixed", 1)),
        "due.discounts.1.until",
        "until after the due date",
    ),
    rule(
        dated(DatedDiscount(date(2024, 5, 31), "fixed", 1)),
        "due.discounts.0.until",
        "until in the past",
    ),
    rule(
        dated(DatedDiscount(DUE, "fixed", 2), DatedDiscount(DUE, "fixed", 1)),
        "due.discounts.1.until",
        "two discounts until the same day",
    ),
    rule(
        dated(DatedDiscount(DUE, "fixed_day", 1)),
        "due.discounts.0.type",
        "daily type on a dated discount",
    ),
    rule(
        dated(DatedDiscount(DUE, "fixed", 50_000)),
        "due.discounts.0.value",
        "dated discount of the whole original",
    ),
    rule(
        dated(DatedDiscount(DUE, "percent", 100)),
        "due.discounts.0.value",
        "dated discount of 100 %",
    ),
    rule(
        replace(VALID, discounts=DailyDiscount("fixed", 1)),
        "due.discounts.type",
        "dated type on a daily discount",
    ),
    rule(
        replace(VALID, discounts=DailyDiscount("fixed_day", 50_000)),
        "due.discounts.value",
        "a day's discount of the whole original",
    ),
    rule(
        replace(VALID, discounts=DailyDiscount("percent_day", 100)),
        "due.discounts.value",
        "a day's discount of 100 %",
    ),
    rule(
        replace(VALID, rebate=FixedOrPercent("fixed_day", 1)),
        "due.rebate.type",
        "rebate type not for it",
    ),
    rule(
        replace(VALID, rebate=FixedOrPercent("fixed", 50_000)),
        "due.rebate.value",
        "rebate of the whole original",
    ),
    rule(
        replace(VALID, rebate=FixedOrPercent("fixed", 45_000)),
        "due.rebate.value",
        "rebate and largest discount (5000) leave nothing",
    ),
    rule(
        replace(VALID, date=TODAY + timedelta(days=MAX_DAYS_AHEAD + 1), discounts=None),
        "due.date",
        "due date too far ahead",
    ),
    rule(
        replace(VALID, fine=FixedOrPercent("fixed", MAX_AMOUNT + 1)),
        "due.fine.value",
        "fixed fine over what a Pix carries",
    ),
    # Rules on what well-formed terms come to, checked once every field is well-formed.
    rule(
        terms(days_valid_after=1, fine=FixedOrPercent("fixed", MAX_AMOUNT - 50_000 + 1)),
        "due.fine.value",
        "fine takes the total over what a Pix carries",
    ),
    rule(
        terms(
            days_valid_after=MAX_DAYS_VALID_AFTER,
            interest=Interest("fixed_day", MAX_AMOUNT // 90),
        ),
        "due.interest.value",
        "interest takes the last day's total over what a Pix carries",
    ),
    rule(
        # 13 days early today: 13 x 2000 + a 25000 rebate is over 50000
        terms(rebate=FixedOrPercent("fixed", 25_000), discounts=DailyDiscount("fixed_day", 2_000)),
        "due.discounts.value",
        "daily discount paid today leaves nothing",
    ),
    rule(
        terms(
            discounts=(
                DatedDiscount(date(2024, 6, 5), "fixed", 500),
                DatedDiscount(date(2024, 6, 10), "fixed", 1_000),
            )
        ),
        "due.discounts.1.value",
        "a later tier bigger than an earlier one",
    ),
]


@pytest.mark.parametrize(("charge", "param"), PROBLEMS)
def test_each_rule_names_its_field(charge, param):
    found = problems(50_000, charge, TODAY)

    assert [problem.param for problem in found] == [param]
    message = found[0].message
    assert message[0].isupper() and message.endswith(".") and ". " not in message


def test_a_percentage_is_checked_in_centavos_against_the_original():
    # 99 % of 1 centavo is 0.99, which rounds to the whole centavo.
    found = problems(1, DueTerms(TODAY, rebate=FixedOrPercent("percent", 99)), TODAY)

    assert [problem.param for problem in found] == ["due.rebate.value"]


def test_one_problem_per_field_in_field_order():
    charge = DueTerms(
        date(2024, 5, 30),
        fine=FixedOrPercent("percent", Decimal("150.555")),  # too much and too precise
        discounts=(DatedDiscount(date(2024, 5, 31), "percent", Decimal("100")),),
        rebate=FixedOrPercent("fixed", 50_000),
        interest=Interest("daily", 1),
    )

    assert [problem.param for problem in problems(50_000, charge, TODAY)] == [
        "due.date",
        "due.fine.value",
        "due.interest.type",
        "due.discounts.0.until",
        "due.discounts.0.value",
        "due.rebate.value",
    ]


# --- Storage ----------------------------------------------------------------------------------


def test_to_json():
    assert to_json(VALID) == {
        "date": "2024-06-14",
        "days_valid_after": 30,
        "fine": {"type": "percent", "value": "2"},
        "interest": {"type": "percent_month", "value": "1"},
        "discounts": [
            {"until": "2024-06-10", "type": "percent", "value": "5"},
            {"until": "2024-06-05", "type": "percent", "value": "10"},
        ],
        "rebate": {"type": "fixed", "value": 44_999},
    }


@pytest.mark.parametrize(
    "charge",
    [
        VALID,
        DueTerms(DUE),
        DueTerms(DUE, discounts=()),
        DueTerms(DUE, discounts=DailyDiscount("percent_day", Decimal("0.50"))),
        DueTerms(DUE, fine=FixedOrPercent("percent", 2), rebate=FixedOrPercent("fixed", 1)),
    ],
)
def test_json_round_trip(charge):
    stored = json.loads(json.dumps(to_json(charge)))

    assert from_json(stored) == charge
    assert to_json(from_json(stored)) == to_json(charge)  # Decimal("0.50") stays "0.50"


# --- Properties -------------------------------------------------------------------------------

PERCENTS = st.decimals(Decimal("0.01"), Decimal("99.99"), places=2)


def type_and_value(types: tuple[str, ...], most: int) -> st.SearchStrategy:
    """A type, and a value fit for it: centavos up to `most`, or a percentage."""
    return st.sampled_from(types).flatmap(
        lambda type_: st.tuples(
            st.just(type_), st.integers(1, most) if type_.startswith("fixed") else PERCENTS
        )
    )


def term(kind: type, types: tuple[str, ...], most: int) -> st.SearchStrategy:
    return type_and_value(types, most).map(lambda pair: kind(*pair))


def tiers(pairs: list[tuple], due_date: date) -> st.SearchStrategy:
    """Dated discounts on distinct days, of any sizes, listed in any order."""
    untils = st.lists(
        st.dates(TODAY, due_date), min_size=len(pairs), max_size=len(pairs), unique=True
    )
    return untils.map(
        lambda days: tuple(DatedDiscount(day, *pair) for day, pair in zip(days, pairs, strict=True))
    )


@st.composite
def charges(draw) -> tuple[int, DueTerms]:
    """An original amount and terms `problems` accepts."""
    original = draw(st.integers(1, 10**9))
    due_date = draw(st.dates(TODAY, TODAY + timedelta(days=400)))
    most = max(1, original // 3)
    days_to_date = (due_date - TODAY).days + 1  # dated discounts fall on distinct days
    dated = st.sampled_from(DATED_DISCOUNT_TYPES).flatmap(  # the standard: one type for all
        lambda type_: st.lists(
            type_and_value((type_,), most),
            min_size=1,
            max_size=min(MAX_DATED_DISCOUNTS, days_to_date),
        )
    )
    charge = DueTerms(
        date=due_date,
        days_valid_after=draw(st.integers(0, MAX_DAYS_VALID_AFTER)),
        fine=draw(st.none() | term(FixedOrPercent, FINE_TYPES, 10**6)),
        interest=draw(st.none() | term(Interest, INTEREST_TYPES, 10**5)),
        discounts=draw(
            st.none()
            | term(DailyDiscount, DAILY_DISCOUNT_TYPES, most)
            | dated.flatmap(lambda pairs: tiers(pairs, due_date))
        ),
        rebate=draw(st.none() | term(FixedOrPercent, REBATE_TYPES, most)),
    )
    assume(problems(original, charge, TODAY) == [])
    return original, charge


DAYS = st.integers(-120, 200)


@given(charges(), DAYS)
def test_the_total_adds_up_and_leaves_at_least_a_centavo(charge, offset):
    original, terms_ = charge
    paid = amount_due(original, terms_, terms_.date + timedelta(days=offset))

    assert paid.total == original - paid.rebate - paid.discount + paid.fine + paid.interest
    assert paid.total >= 1


@given(charges(), st.integers(0, 200), st.integers(0, 200))
def test_after_the_due_date_the_amount_never_decreases(charge, first, second):
    original, terms_ = charge
    due = effective_due_date(terms_)
    earlier, later = sorted((first, second))

    assert (
        amount_due(original, terms_, due + timedelta(days=earlier)).total
        <= amount_due(original, terms_, due + timedelta(days=later)).total
    )


@given(charges(), st.integers(0, 400), st.integers(0, 400))
def test_paying_earlier_never_costs_more(charge, first, second):
    original, terms_ = charge
    due = effective_due_date(terms_)
    earlier, later = (due - timedelta(days=days) for days in sorted((first, second), reverse=True))

    assert (
        amount_due(original, terms_, earlier).total
        <= amount_due(original, terms_, later).total
        <= amount_due(original, terms_, due).total
    )
    assert (
        amount_due(original, terms_, terms_.date).total <= amount_due(original, terms_, due).total
    )


@given(charges())
def test_generated_terms_round_trip(charge):
    _, terms_ = charge

    assert from_json(json.loads(json.dumps(to_json(terms_)))) == terms_
