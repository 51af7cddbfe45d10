"""The shared retry waits (`app.retries`): jittered exponential backoff and `Retry-After`."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from app.retries import backoff, jittered, retry_after

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CAP = timedelta(hours=1)


class FixedDraw:
    """A random source whose `uniform` returns the low end, the high end or the middle."""

    def __init__(self, where: str):
        self.where = where

    def uniform(self, low: float, high: float) -> float:
        return {"low": low, "high": high, "middle": (low + high) / 2}[self.where]


# Backoff


def test_backoff_doubles_from_the_base_up_to_the_cap():
    waits = [backoff(n, timedelta(seconds=30), CAP, jitter=0) for n in range(9)]

    assert [wait.total_seconds() for wait in waits] == [
        30,
        60,
        120,
        240,
        480,
        960,
        1920,
        3600,
        3600,
    ]


def test_backoff_is_spread_by_the_jitter_either_way():
    base, cap = timedelta(seconds=10), CAP

    assert backoff(1, base, cap, 0.1, FixedDraw("low")) == timedelta(seconds=18)
    assert backoff(1, base, cap, 0.1, FixedDraw("high")) == timedelta(seconds=22)
    assert backoff(1, base, cap, 0.1, FixedDraw("middle")) == timedelta(seconds=20)


def test_real_jitter_stays_within_its_bounds_and_varies():
    waits = {backoff(2, timedelta(seconds=1), CAP, rng=random.Random(7)) for _ in range(50)}
    waits |= {backoff(2, timedelta(seconds=1), CAP) for _ in range(50)}

    assert all(timedelta(seconds=3.6) <= wait <= timedelta(seconds=4.4) for wait in waits)
    assert len(waits) > 1


def test_a_huge_attempt_saturates_at_the_cap_without_overflowing():
    assert backoff(10_000, timedelta(seconds=30), CAP, jitter=0) == CAP


@pytest.mark.parametrize(("attempt", "jitter"), [(-1, 0.1), (0, -0.1), (0, 1.0)])
def test_nonsense_is_refused(attempt, jitter):
    with pytest.raises(ValueError):
        backoff(attempt, timedelta(seconds=1), CAP, jitter)


def test_jittered_without_jitter_is_the_wait_itself():
    assert jittered(timedelta(seconds=5), 0) == timedelta(seconds=5)


# Retry-After


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", timedelta(seconds=120)),
        (" 0 ", timedelta(0)),
        ("7200", CAP),
        ("9" * 40, CAP),
        ("Mon, 02 Mar 2026 12:00:30 GMT", timedelta(seconds=30)),
        ("Mon, 02 Mar 2026 12:00:30 -0000", timedelta(seconds=30)),
        ("Mon, 02 Mar 2026 11:00:00 GMT", timedelta(0)),
        ("Wed, 21 Oct 2099 07:28:00 GMT", CAP),
    ],
    ids=[
        "seconds",
        "zero",
        "seconds-capped",
        "absurdly-many-digits",
        "http-date",
        "http-date-without-zone",
        "http-date-past",
        "http-date-capped",
    ],
)
def test_retry_after_reads_seconds_and_dates_within_zero_and_the_cap(value, expected):
    assert retry_after(value, CAP, NOW) == expected


@pytest.mark.parametrize("value", [None, "", "soon", "-5", "1.5", "²", "Mon, 99 Foo 2026"])
def test_retry_after_absent_or_unreadable_is_none(value):
    assert retry_after(value, CAP, NOW) is None


def test_retry_after_measures_dates_from_now_by_default():
    in_a_minute = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%a, %d %b %Y %H:%M:%S GMT")

    wait = retry_after(in_a_minute, CAP)

    assert timedelta(seconds=55) <= wait <= timedelta(seconds=60)
