"""Pix charges with a due date (the standard's `cobv`): their terms and what they cost on a day.

Why the rules are what they are (API Pix 2.9.0, `CobVValor` and `CobDataDeVencimento`):

- A due date on a weekend or holiday is prorrogated to the next business day, and fine,
  interest and `days_valid_after` count from that day, as the standard requires.
- The last payable day is `days_valid_after` calendar days later, moved to the next business
  day when it is not one: this is what the standard's examples A to G accept.
- Discounts move with the prorrogation too, as the standard says of every field that refers
  to the due date (and as a PSP computes them): a daily discount counts the days to the
  prorrogated date, and a dated discount until the due date lasts until it.
- Dated discounts are tiers that shrink as their dates go on (`problems` refuses others, so
  every reading of "until that date" agrees): the first whose `until` has not passed, the
  largest, applies, so paying earlier never costs more.
- Interest runs in calendar days (juros modalities 1 to 4): a month is 30 days, a year 365.
- Every percentage is of the original amount, as the standard says of the rebate, so no part
  depends on another. Each part is computed exactly and rounded once, half up, to centavos:
  interest over many days is not a sum of rounded days.
- A Pix moves at least 1 centavo, so a discount stops there; the standard refuses a rebate or
  a discount worth the whole original amount or 100 %, and so does `problems`.
"""

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from typing import TypeVar

from app.business_days import SAO_PAULO, is_business_day, sao_paulo_day
from app.formats.money import Amount
from app.marks import translatable
from app.models import Transaction, TransactionStatus
from app.pix.brcode import MAX_AMOUNT

FINE_TYPES = ("fixed", "percent")
REBATE_TYPES = ("fixed", "percent")
INTEREST_TYPES = ("fixed_day", "percent_day", "percent_month", "percent_year")
DATED_DISCOUNT_TYPES = ("fixed", "percent")
DAILY_DISCOUNT_TYPES = ("fixed_day", "percent_day")
MAX_DAYS_VALID_AFTER = 90
MAX_DATED_DISCOUNTS = 3
# How far ahead a due date may be: an invoice, rent or a school year, with room to spare;
# it also bounds the charge's life (and what reconciliation must look back over).
MAX_DAYS_AHEAD = 3 * 366
MAX_PERCENT = Decimal(100)  # exclusive: 100 % of the original would leave nothing to pay

FIXED_TYPES = frozenset({"fixed", "fixed_day"})  # centavos; every other type is a percentage
_PERIOD_DAYS = {"percent_month": 30, "percent_year": 365}
_CENTAVO = Decimal(1)
_HUNDREDTH = Decimal("0.01")
# Dividing by 30 or 365 does not terminate; 60 digits keep the half-up decision exact.
_EXACT = Context(prec=60)

Value = int | Decimal  # centavos for the fixed types, percent for the others


@dataclass(frozen=True)
class FixedOrPercent:
    """A fine or a rebate: centavos, or a percentage of the original amount."""

    type: str
    value: Value


@dataclass(frozen=True)
class Interest:
    """Per calendar day late: centavos, or a percentage of the original amount a day, month or
    year."""

    type: str
    value: Value


@dataclass(frozen=True)
class DatedDiscount:
    """Centavos or a percentage off when paid on `until` or before."""

    until: date
    type: str
    value: Value


@dataclass(frozen=True)
class DailyDiscount:
    """Centavos or a percentage off for each calendar day paid before the due date."""

    type: str
    value: Value


_Term = TypeVar("_Term", FixedOrPercent, Interest, DailyDiscount)


@dataclass(frozen=True)
class DueTerms:
    date: date
    days_valid_after: int = 0
    fine: FixedOrPercent | None = None
    interest: Interest | None = None
    discounts: tuple[DatedDiscount, ...] | DailyDiscount | None = None
    rebate: FixedOrPercent | None = None


@dataclass(frozen=True)
class AmountDue:
    original: int
    rebate: int
    discount: int
    fine: int
    interest: int
    total: int
    day: date


@dataclass(frozen=True)
class DueProblem:
    """A broken rule: the field it names, and a marked message (`app.marks`) with its values,
    so the API says it in English and the dashboard in the reader's language."""

    param: str
    message: str
    values: dict = field(default_factory=dict)


def effective_due_date(terms: DueTerms) -> date:
    """The due date, prorrogated to the next business day when it is not one."""
    return _business_day_from(terms.date)


def last_payable_day(terms: DueTerms) -> date:
    return _business_day_from(effective_due_date(terms) + timedelta(days=terms.days_valid_after))


def payable_on(terms: DueTerms, day: date) -> bool:
    """Paying early is always allowed; whether the charge existed yet is the caller's check."""
    return day <= last_payable_day(terms)


def payable_until(terms: DueTerms) -> datetime:
    """The moment the last payable day ends in São Paulo."""
    return datetime.combine(last_payable_day(terms) + timedelta(days=1), time.min, tzinfo=SAO_PAULO)


def amount_due(original: int, terms: DueTerms, day: date) -> AmountDue:
    """What the payer owes on `day`, a São Paulo date, for terms `problems` accepts. A day
    after the last payable one is still priced: refusing the payment is the caller's call."""
    rebate = _amount(original, terms.rebate) if terms.rebate else 0
    discount = min(_discount(original, terms, day), original - rebate - 1)
    days_late = max((day - effective_due_date(terms)).days, 0)
    fine = interest = 0
    if days_late and terms.fine:
        fine = _amount(original, terms.fine)
    if days_late and terms.interest:
        interest = _amount(original, terms.interest, days_late)
    return AmountDue(
        original=original,
        rebate=rebate,
        discount=discount,
        fine=fine,
        interest=interest,
        total=original - rebate - discount + fine + interest,
        day=day,
    )


def is_fixed(type_: str) -> bool:
    """Whether a value of this type is centavos (else a number of percent)."""
    return type_ in FIXED_TYPES


def charge_amount_due(charge: Transaction, day: date) -> AmountDue | None:
    """What a charge with a due date asks of a Pix made on `day` (São Paulo), in parts; None
    for any other charge, whose amount is fixed."""
    if charge.due_terms is None:
        return None
    return amount_due(charge.due_original_amount, from_json(charge.due_terms), day)


def amount_payable(charge: Transaction, at: datetime) -> int:
    """The exact amount a Pix made at `at` must carry."""
    breakdown = charge_amount_due(charge, sao_paulo_day(at))
    return charge.amount if breakdown is None else breakdown.total


def shown_amount_due(charge: Transaction, now: datetime) -> AmountDue | None:
    """The breakdown people are shown: of the day it was paid, or of today while it waits
    for payment; None for a charge without a due date, and for one that is neither paid nor
    payable (expired, cancelled, held for review), where no day's amount applies."""
    if charge.paid_at is not None:
        return charge_amount_due(charge, sao_paulo_day(charge.paid_at))
    if charge.status is TransactionStatus.WAITING_PAYMENT:
        return charge_amount_due(charge, sao_paulo_day(now))
    return None


def problems(original: int, terms: DueTerms, today: date) -> list[DueProblem]:
    """What stops these terms from being issued today (a São Paulo date) for `original`
    centavos: the first broken rule of each field, in field order; [] when none is."""
    found: dict[str, DueProblem] = {}
    for problem in _violations(original, terms, today):
        found.setdefault(problem.param, problem)
    if not found:  # well-formed terms: what they come to
        for problem in _amount_problems(original, terms, today):
            found.setdefault(problem.param, problem)
    return list(found.values())


def to_json(terms: DueTerms) -> dict:
    """For a JSON column: dates as ISO strings, percentages as strings, centavos as ints."""
    data: dict = {"date": terms.date.isoformat(), "days_valid_after": terms.days_valid_after}
    if terms.fine is not None:
        data["fine"] = _term_json(terms.fine)
    if terms.interest is not None:
        data["interest"] = _term_json(terms.interest)
    if isinstance(terms.discounts, DailyDiscount):
        data["discounts"] = _term_json(terms.discounts)
    elif terms.discounts is not None:
        data["discounts"] = [
            {"until": discount.until.isoformat(), **_term_json(discount)}
            for discount in terms.discounts
        ]
    if terms.rebate is not None:
        data["rebate"] = _term_json(terms.rebate)
    return data


def from_json(data: dict) -> DueTerms:
    discounts = data.get("discounts")
    if isinstance(discounts, dict):
        discounts = _term_from_json(DailyDiscount, discounts)
    elif discounts is not None:
        discounts = tuple(
            DatedDiscount(date.fromisoformat(item["until"]), item["type"], _value(item["value"]))
            for item in discounts
        )
    return DueTerms(
        date=date.fromisoformat(data["date"]),
        days_valid_after=data["days_valid_after"],
        fine=_term_from_json(FixedOrPercent, data.get("fine")),
        interest=_term_from_json(Interest, data.get("interest")),
        discounts=discounts,
        rebate=_term_from_json(FixedOrPercent, data.get("rebate")),
    )


def _business_day_from(day: date) -> date:
    while not is_business_day(day):
        day += timedelta(days=1)
    return day


def _discount(original: int, terms: DueTerms, day: date) -> int:
    discounts = terms.discounts
    due_date = effective_due_date(terms)
    if isinstance(discounts, DailyDiscount):
        days_early = (due_date - day).days
        return _amount(original, discounts, days_early) if days_early > 0 else 0
    ahead = [
        _amount(original, discount)
        for discount in discounts or ()
        if (due_date if discount.until == terms.date else discount.until) >= day
    ]
    return max(ahead, default=0)


def _amount(
    original: int,
    term: FixedOrPercent | Interest | DatedDiscount | DailyDiscount,
    days: int = 1,
) -> int:
    """Whole centavos: a fixed value (per day for the daily types), or a percentage of the
    original over `days` (pro rata for a monthly or yearly rate), rounded once, half up."""
    if is_fixed(term.type):
        return term.value * days
    period = _PERIOD_DAYS.get(term.type, 1)
    with localcontext(_EXACT):
        share = Decimal(original) * Decimal(term.value) * days / (100 * period)
        return int(share.quantize(_CENTAVO, rounding=ROUND_HALF_UP))


def _violations(original: int, terms: DueTerms, today: date) -> Iterator[DueProblem]:
    if terms.date < today:
        yield DueProblem("due.date", translatable("The due date must not be before today."))
    elif (terms.date - today).days > MAX_DAYS_AHEAD:
        yield DueProblem(
            "due.date",
            translatable("The due date is at most %(days)s days from today."),
            {"days": MAX_DAYS_AHEAD},
        )
    days = terms.days_valid_after
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_DAYS_VALID_AFTER:
        yield DueProblem(
            "due.days_valid_after",
            translatable("The days valid after the due date are a whole number from 0 to %(max)s."),
            {"max": MAX_DAYS_VALID_AFTER},
        )
    if terms.fine and (problem := _shape_problem("due.fine", terms.fine, FINE_TYPES)):
        yield problem
    if terms.interest and (
        problem := _shape_problem("due.interest", terms.interest, INTEREST_TYPES)
    ):
        yield problem
    discounts = terms.discounts
    dated = () if discounts is None or isinstance(discounts, DailyDiscount) else discounts
    if isinstance(discounts, DailyDiscount):
        if problem := _capped_problem(original, "due.discounts", discounts, DAILY_DISCOUNT_TYPES):
            yield problem
    elif discounts is not None and not 1 <= len(dated) <= MAX_DATED_DISCOUNTS:
        yield DueProblem(
            "due.discounts",
            translatable("Send 1 to %(max)s dated discounts."),
            {"max": MAX_DATED_DISCOUNTS},
        )
    largest_discount = 0
    for index, discount in enumerate(dated):
        path = f"due.discounts.{index}"
        if discount.until > terms.date:
            yield DueProblem(
                f"{path}.until", translatable("A discount's date must not be after the due date.")
            )
        elif discount.until < today:
            yield DueProblem(
                f"{path}.until", translatable("A discount's date must not be before today.")
            )
        elif discount.until in {earlier.until for earlier in dated[:index]}:
            yield DueProblem(
                f"{path}.until", translatable("Two discounts must not have the same date.")
            )
        if index and discount.type in DATED_DISCOUNT_TYPES and discount.type != dated[0].type:
            yield DueProblem(
                f"{path}.type",
                translatable("Every dated discount is of the same type, as the first one."),
            )
        if problem := _capped_problem(original, path, discount, DATED_DISCOUNT_TYPES):
            yield problem
        else:
            largest_discount = max(largest_discount, _amount(original, discount))
    if terms.rebate:
        problem = _capped_problem(original, "due.rebate", terms.rebate, REBATE_TYPES)
        if problem:
            yield problem
        elif _amount(original, terms.rebate) + largest_discount >= original:
            yield DueProblem(
                "due.rebate.value",
                translatable(
                    "The rebate and the largest discount together must leave at least 1 "
                    "centavo to pay."
                ),
            )


def _amount_problems(original: int, terms: DueTerms, today: date) -> Iterator[DueProblem]:
    """What well-formed terms come to: never more than a Pix carries on the last payable day,
    never nothing to pay with a daily discount paid today, and tiers that shrink as their
    dates go on (so every reading of "the discount until that date" agrees, a PSP's too)."""
    if amount_due(original, terms, last_payable_day(terms)).total > MAX_AMOUNT:
        yield DueProblem(
            "due.interest.value" if terms.interest else "due.fine.value",
            translatable(
                "With the fine and interest, the last payable day would ask over %(max)s."
            ),
            {"max": Amount(MAX_AMOUNT, "BRL")},
        )
    rebate = _amount(original, terms.rebate) if terms.rebate else 0
    if isinstance(terms.discounts, DailyDiscount):
        days_early = (effective_due_date(terms) - today).days
        if days_early > 0 and rebate + _amount(original, terms.discounts, days_early) >= original:
            yield DueProblem(
                "due.discounts.value",
                translatable("Paid today, the daily discount would leave nothing to pay."),
            )
    elif terms.discounts:
        by_date = sorted(terms.discounts, key=lambda discount: discount.until)
        for earlier, later in itertools.pairwise(by_date):
            if _amount(original, later) >= _amount(original, earlier):
                yield DueProblem(
                    f"due.discounts.{terms.discounts.index(later)}.value",
                    translatable("A discount until a later date must be smaller."),
                )


def _capped_problem(
    original: int,
    path: str,
    term: FixedOrPercent | DatedDiscount | DailyDiscount,
    types: tuple[str, ...],
) -> DueProblem | None:
    """The standard refuses a rebate or discount worth the whole original amount."""
    problem = _shape_problem(path, term, types)
    if not problem and _amount(original, term) >= original:
        problem = DueProblem(
            f"{path}.value", translatable("This must come to less than the original amount.")
        )
    return problem


def _shape_problem(
    path: str,
    term: FixedOrPercent | Interest | DatedDiscount | DailyDiscount,
    types: tuple[str, ...],
) -> DueProblem | None:
    """A known type, then a value fit for it: centavos, or a percentage with 2 places at most,
    above 0 and below 100. The field named says whose rule it is."""
    if term.type not in types:
        return DueProblem(
            f"{path}.type",
            translatable("The type is one of: %(types)s."),
            {"types": ", ".join(types)},
        )
    value = term.value
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return DueProblem(f"{path}.value", translatable("The value is a number."))
    if is_fixed(term.type):
        if not isinstance(value, int) or not 1 <= value <= MAX_AMOUNT:
            return DueProblem(
                f"{path}.value",
                translatable("A fixed value is a whole number of centavos from 1 to %(max)s."),
                {"max": MAX_AMOUNT},
            )
        return None
    percent = Decimal(value)
    if not (percent.is_finite() and 0 < percent < MAX_PERCENT):
        return DueProblem(
            f"{path}.value", translatable("A percentage is more than 0 and less than 100.")
        )
    if percent != percent.quantize(_HUNDREDTH):
        return DueProblem(
            f"{path}.value", translatable("A percentage has at most 2 decimal places.")
        )
    return None


def _term_json(term: FixedOrPercent | Interest | DatedDiscount | DailyDiscount) -> dict:
    value = str(term.value) if isinstance(term.value, Decimal) else term.value
    return {"type": term.type, "value": value}


def _term_from_json(kind: type[_Term], data: dict | None) -> _Term | None:
    return None if data is None else kind(data["type"], _value(data["value"]))


def _value(value: int | str) -> Value:
    return Decimal(value) if isinstance(value, str) else value
