"""Brazilian business days in America/Sao_Paulo: weekends and national holidays are not.

National holidays: the fixed ones (Lei 662/1949 and later laws, Consciência Negra since 2024)
and the movable ones banks close for (Carnival Monday and Tuesday, Good Friday, Corpus
Christi), computed from Easter, so no yearly table needs maintaining.
"""

from datetime import date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

SAO_PAULO = ZoneInfo("America/Sao_Paulo")
FIXED_HOLIDAYS = ((1, 1), (4, 21), (5, 1), (9, 7), (10, 12), (11, 2), (11, 15), (12, 25))
CONSCIENCIA_NEGRA, FIRST_CONSCIENCIA_NEGRA = (11, 20), 2024  # Lei 14.759/2023


def easter(year: int) -> date:
    """Gregorian Easter Sunday (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    leap = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * leap) // 451
    month, day = divmod(h + leap - 7 * m + 114, 31)
    return date(year, month, day + 1)


@lru_cache(maxsize=64)
def holidays(year: int) -> frozenset[date]:
    sunday = easter(year)
    movable = {sunday - timedelta(days=48), sunday - timedelta(days=47)}  # Carnival
    movable |= {sunday - timedelta(days=2), sunday + timedelta(days=60)}  # Good Friday, Corpus
    fixed = FIXED_HOLIDAYS + ((CONSCIENCIA_NEGRA,) if year >= FIRST_CONSCIENCIA_NEGRA else ())
    return frozenset({date(year, month, day) for month, day in fixed} | movable)


def sao_paulo_day(moment: datetime) -> date:
    """The calendar date in São Paulo at `moment`: the day a Pix counts as paid on."""
    return moment.astimezone(SAO_PAULO).date()


def is_business_day(day: date) -> bool:
    return day.weekday() < 5 and day not in holidays(day.year)


def start_of_business_day_after(moment: datetime, business_days: int) -> datetime:
    """Midnight in São Paulo of the Nth business day after `moment`'s local date (D+N)."""
    day = moment.astimezone(SAO_PAULO).date()
    remaining = business_days
    while remaining > 0:
        day += timedelta(days=1)
        if is_business_day(day):
            remaining -= 1
    if business_days == 0:
        return moment
    return datetime.combine(day, time.min, tzinfo=SAO_PAULO)
