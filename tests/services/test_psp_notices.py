"""The back office's PSP notices: one row per subject and kind, counted not repeated, safe to
store whatever a PSP sent, reopened when reported again after being resolved."""

import logging

import pytest

from app.extensions import db
from app.models import PspNotice, PspNoticeKind
from app.services import accounts, psp_notices
from tests.support import factories

KIND = PspNoticeKind.UNMATCHED_PIX


@pytest.fixture
def ctx(app):
    with app.app_context():
        yield
        db.session.rollback()


@pytest.fixture
def staff_user_id(ctx):
    user = accounts.add_user("ops@acmepay.example.com", factories.PASSWORD, is_staff=True)
    db.session.flush()
    return user.id


def test_a_notice_is_logged_once_and_counted(ctx, caplog):
    with caplog.at_level(logging.WARNING, logger="app.services.psp_notices"):
        first = psp_notices.record(KIND, "E1", "a Pix of no charge", {"valor": "1.00"})
        again = psp_notices.record(KIND, "E1", "a Pix of no charge", {"valor": "1.00"})

    assert again.id == first.id and again.occurrences == 2
    assert len(caplog.records) == 1
    assert psp_notices.open_counts()[KIND] == 1
    assert psp_notices.open_counts()[PspNoticeKind.UNCONFIRMED_PIX] == 0


def test_what_a_psp_sent_is_stored_without_nul_and_within_bounds(ctx):
    notice = psp_notices.record(
        KIND, "E2\x00" + "x" * 300, "detail\x00" * 400, {"in\x00fo": ["a\x00b", {"n": 1}]}
    )
    db.session.flush()

    assert len(notice.subject) == psp_notices.MAX_SUBJECT and "\x00" not in notice.subject
    assert len(notice.detail) == psp_notices.MAX_DETAIL and "\x00" not in notice.detail
    assert notice.reported == {"info": ["ab", {"n": 1}]}
    huge = psp_notices.record(KIND, "E3", "big", {"blob": "y" * 50_000})
    assert set(huge.reported) == {"truncated"}


def test_a_resolved_notice_reopens_when_reported_again(ctx, staff_user_id):
    notice = psp_notices.record(KIND, "E4", "first")
    psp_notices.resolve(notice.id, staff_user_id)
    assert psp_notices.open_notices() == []

    reopened = psp_notices.record(KIND, "E4", "second")

    assert reopened.id == notice.id and reopened.resolved_at is None
    assert reopened.detail == "second" and psp_notices.open_notices() == [reopened]


def test_a_twin_inserting_first_is_counted_not_duplicated(ctx, monkeypatch):
    """The webhook and reconciliation may record the same notice at once."""
    twin = psp_notices.record(KIND, "E5", "twin")
    db.session.flush()
    real_find = psp_notices._find
    calls = []

    def missed_once(kind, subject):
        calls.append(subject)
        return None if len(calls) == 1 else real_find(kind, subject)

    monkeypatch.setattr(psp_notices, "_find", missed_once)

    counted = psp_notices.record(KIND, "E5", "twin")

    assert counted.id == twin.id and counted.occurrences == 2
    assert db.session.query(PspNotice).filter_by(subject="E5").count() == 1
