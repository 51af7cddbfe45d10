"""What `./scripts/run` keeps off the console (a routine record, in its process's log file
only) and what it shows: warnings, errors and anything it cannot read as a routine record."""

import json

import pytest

from app.devstack import is_routine


def _record(level: str) -> str:
    return json.dumps({"ts": "2026-11-26T10:17:13+0000", "level": level, "message": "m"}) + "\n"


@pytest.mark.parametrize(
    ("line", "stream"),
    [
        (_record("INFO"), "stderr"),  # a job's or a request's line (app/logs.py)
        (_record("DEBUG"), "stderr"),
        ("[2026-11-26 10:16:07 +0000] [5171] [INFO] Starting gunicorn 27.0.1\n", "stderr"),
        ("10:16:58 Enqueued job expire_charges to queue money\n", "stdout"),  # rq cron
    ],
)
def test_routine_records_stay_in_the_log_file(line, stream):
    assert is_routine(line, stream)


@pytest.mark.parametrize(
    ("line", "stream"),
    [
        (_record("WARNING"), "stderr"),
        (_record("ERROR"), "stderr"),
        ("[2026-11-26 10:16:07 +0000] [5171] [ERROR] Exception in worker process\n", "stderr"),
        ("[2026-11-26 10:16:07 +0000] [5171] [WARNING] Worker graceful timeout\n", "stderr"),
        ("10:16:58 Failed to enqueue expire_charges\n", "stderr"),  # rq's errors: stderr
        ("Traceback (most recent call last):\n", "stderr"),
        ('  File "worker.py", line 1, in <module>\n', "stderr"),
        ("{not json\n", "stderr"),
        ('["INFO"]\n', "stdout"),
    ],
)
def test_warnings_errors_and_anything_unknown_reach_the_console(line, stream):
    assert not is_routine(line, stream)
