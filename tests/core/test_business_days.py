"""D+N in Brazilian business days (America/Sao_Paulo)."""

from datetime import UTC, date, datetime

import pytest

from app.business_days import SAO_PAULO, easter, holidays, start_of_business_day_after


@pytest.mark.parametrize(
    ("year", "sunday"),
    [(2024, date(2024, 3, 31)), (2026, date(2026, 4, 5)), (2027, date(2027, 3, 28))],
)
def test_easter(year, sunday):
    assert easter(year) == sunday


def test_2026_movable_holidays():
    assert {date(2026, 2, 16), date(2026, 2, 17), date(2026, 4, 3), date(2026, 6, 4)} <= holidays(
        2026
    )
    assert date(2026, 11, 20) in holidays(2026)


def test_consciencia_negra_is_a_national_holiday_from_2024():
    assert date(2024, 11, 20) in holidays(2024)
    assert date(2023, 11, 20) not in holidays(2023)


@pytest.mark.parametrize(
    ("paid_at", "days", "released_local"),
    [
        # Tuesday 15:00 São Paulo → Wednesday 00:00
        (datetime(2026, 11, 17, 18, 0, tzinfo=UTC), 1, datetime(2026, 11, 18)),
        # Thursday 19 Nov → Friday 20 Nov is Consciência Negra → Monday 23 Nov
        (datetime(2026, 11, 19, 12, 0, tzinfo=UTC), 1, datetime(2026, 11, 23)),
        # Friday 23:30 São Paulo is Saturday 02:30 UTC: the local date counts → Monday
        (datetime(2026, 11, 28, 2, 30, tzinfo=UTC), 1, datetime(2026, 11, 30)),
        # D+2 across a weekend
        (datetime(2026, 11, 26, 12, 0, tzinfo=UTC), 2, datetime(2026, 11, 30)),
    ],
)
def test_release_at_midnight_of_the_nth_business_day(paid_at, days, released_local):
    released = start_of_business_day_after(paid_at, days)
    assert released == released_local.replace(tzinfo=SAO_PAULO)


def test_d_plus_zero_releases_at_once():
    moment = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert start_of_business_day_after(moment, 0) == moment
