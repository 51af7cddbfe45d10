"""Wallet statements: one row per posting, newest first, with the available balance after
each, right on every page and in the streamed export, on ledger-clean data."""

import itertools
import uuid

import pytest

from app.extensions import db
from app.models import KeyMode, LedgerAccount
from app.services import ledger, statements
from app.services.ledger import Line
from tests.support import factories

A, P = LedgerAccount.AVAILABLE, LedgerAccount.PENDING
CLEARING, FEES = LedgerAccount.PROVIDER_CLEARING, LedgerAccount.PLATFORM_FEES
# (kind, available change, pending change) of the wallet under test, oldest first.
MOVEMENTS = [
    ("charge_settlement", 0, 10_000),
    ("settlement_release", 10_000, -10_000),
    ("charge_settlement", 0, 5_000),
    ("payout_debit", -2_100, 0),
    ("settlement_release", 5_000, -5_000),
    ("payout_debit", -1_100, 0),
    ("payout_refund", 1_100, 0),
]


def _post(account_id, kind, available, pending, mode=KeyMode.TEST, currency="BRL"):
    lines = [Line(A, available), Line(P, pending), Line(CLEARING, -(available + pending))]
    ledger.post(
        account_id=account_id,
        mode=mode,
        currency=currency,
        kind=kind,
        reference_id=uuid.uuid4().hex,
        description=f"{kind} {available:+} {pending:+}",
        lines=[line for line in lines if line.amount],
    )


@pytest.fixture
def account_id(app):
    mine = factories.make_account(app, "Minha Loja")
    other = factories.make_account(app, "Outra Loja")
    with app.app_context():
        for kind, available, pending in MOVEMENTS:
            _post(mine, kind, available, pending)
            _post(other, kind, available * 3, pending * 3)  # interleaved, never shown
        _post(mine, "charge_settlement", 0, 7_000, mode=KeyMode.LIVE)
        _post(mine, "charge_settlement", 0, 900, currency="USD")
        ledger.post(  # touches no wallet: never in a statement
            account_id=mine,
            mode=KeyMode.TEST,
            currency="BRL",
            kind="payout_completion",
            reference_id="outside",
            description="clearing only",
            lines=[Line(CLEARING, 500), Line(FEES, -500)],
        )
        db.session.commit()
        assert ledger.check() == []
    return mine


def _expected() -> list[tuple]:
    balances = itertools.accumulate(available for _, available, _ in MOVEMENTS)
    rows = [(*movement, balance) for movement, balance in zip(MOVEMENTS, balances, strict=True)]
    return rows[::-1]


def _plain(rows) -> list[tuple]:
    return [
        (row.kind, row.available_change, row.pending_change, row.available_balance) for row in rows
    ]


def test_one_page_holds_every_posting_newest_first_with_its_balance(app, account_id):
    with app.app_context():
        page = statements.statement(account_id, KeyMode.TEST, "BRL")
    assert _plain(page.rows) == _expected()
    assert page.rows[0].available_balance == 12_900  # the wallet's available balance
    assert page.rows[0].description == "payout_refund +1100 +0"
    assert page.rows[0].created_at.tzinfo is not None
    assert (page.page, page.per_page, page.has_next) == (1, 50, False)


def test_every_page_has_the_right_running_balance(app, account_id):
    with app.app_context():
        pages = [statements.statement(account_id, KeyMode.TEST, "BRL", n, 3) for n in (1, 2, 3)]
        beyond = statements.statement(account_id, KeyMode.TEST, "BRL", 4, 3)
    assert [len(page.rows) for page in pages] == [3, 3, 1]
    assert [page.has_next for page in pages] == [True, True, False]
    assert _plain(row for page in pages for row in page.rows) == _expected()
    assert beyond.rows == [] and not beyond.has_next


def test_a_later_posting_does_not_change_an_older_page(app, account_id):
    with app.app_context():
        before = statements.statement(account_id, KeyMode.TEST, "BRL", 2, 3)
        _post(account_id, "payout_debit", -500, 0)
        db.session.commit()
        after = statements.statement(account_id, KeyMode.TEST, "BRL", 1, 4)
        shifted = statements.statement(account_id, KeyMode.TEST, "BRL", 2, 4)
    assert after.rows[0].available_balance == 12_400
    assert _plain(after.rows[1:] + shifted.rows) == _expected()
    assert _plain(before.rows) == _expected()[3:6]


@pytest.mark.parametrize("chunk_size", [1, 2, 500])
def test_the_export_streams_the_same_rows_across_chunks(app, account_id, chunk_size):
    with app.app_context():
        rows = list(statements.statement_rows(account_id, KeyMode.TEST, "BRL", chunk_size))
        page = statements.statement(account_id, KeyMode.TEST, "BRL")
    assert _plain(rows) == _expected()
    assert rows == page.rows


def test_each_mode_and_currency_has_its_own_statement(app, account_id):
    with app.app_context():
        live = statements.statement(account_id, KeyMode.LIVE, "BRL")
        usd = list(statements.statement_rows(account_id, KeyMode.TEST, "USD"))
        none = statements.statement(account_id, KeyMode.LIVE, "USD")
        none_exported = list(statements.statement_rows(account_id, KeyMode.LIVE, "USD"))
    assert _plain(live.rows) == [("charge_settlement", 0, 7_000, 0)]
    assert _plain(usd) == [("charge_settlement", 0, 900, 0)]
    assert none.rows == [] and not none.has_next
    assert none_exported == []


def test_gross_is_net_plus_the_fees_in_both_directions(app):
    account_id = factories.make_account(app, "Loja das Taxas")
    provider_fees = LedgerAccount.PROVIDER_FEES
    postings = [  # (kind, lines): a credit with fees, a payout with its fee, its refund
        ("charge_settlement", [Line(P, 9_701), Line(provider_fees, 99), Line(FEES, 200)]),
        ("settlement_release", [Line(A, 9_701), Line(P, -9_701)]),
        ("payout_debit", [Line(A, -5_300), Line(LedgerAccount.PAYOUT_CLEARING, 5_000)]),
        ("payout_refund", [Line(A, 5_300), Line(LedgerAccount.PAYOUT_CLEARING, -5_000)]),
    ]
    fee_of = {"payout_debit": 300, "payout_refund": -300}
    with app.app_context():
        for kind, lines in postings:
            fee = fee_of.get(kind, 0)
            balancing = -sum(line.amount for line in lines) - fee
            extra = [Line(FEES, fee)] if fee else []
            if kind == "charge_settlement":
                extra = [Line(CLEARING, balancing)]
            ledger.post(
                account_id=account_id,
                mode=KeyMode.TEST,
                currency="BRL",
                kind=kind,
                reference_id=uuid.uuid4().hex,
                description=kind,
                lines=lines + extra,
            )
        db.session.commit()
        assert ledger.check() == []
        page = statements.statement(account_id, KeyMode.TEST, "BRL").rows
        exported = list(statements.statement_rows(account_id, KeyMode.TEST, "BRL"))

    split = [(row.kind, row.gross, row.fee, row.net) for row in page]
    assert split == [
        ("payout_refund", 5_000, -300, 5_300),
        ("payout_debit", -5_000, 300, -5_300),
        ("settlement_release", 0, 0, 0),
        ("charge_settlement", 10_000, 299, 9_701),
    ]
    assert [(row.kind, row.gross, row.fee, row.net) for row in exported] == split


def test_a_period_is_bounded_by_its_opening_and_closing_balances(app, account_id):
    with app.app_context():
        whole = statements.statement(account_id, KeyMode.TEST, "BRL")
        assert (whole.opening_balance, whole.closing_balance) == (0, _expected()[0][3])
        everything = statements.Period(start=None, stop=None)
        assert statements.statement(account_id, KeyMode.TEST, "BRL", period=everything) == whole
        none = statements.statement(account_id, KeyMode.LIVE, "USD")
        assert (none.rows, none.opening_balance, none.closing_balance) == ([], 0, 0)
