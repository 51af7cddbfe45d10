"""The dashboard's search box below the pages (`services.search`): what a finance person
remembers of a payment, a dispute or a payout finds it, in its own account and mode only;
typed wildcards find themselves; on PostgreSQL the search reads its trigram index."""

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import KeyMode
from app.models.transaction import TRANSACTION_SEARCH_TEXT
from app.services import search
from app.services.payouts import listing as payout_listing
from app.services.transactions.payment_listing import PaymentQuery, list_payments
from tests.support import charges, factories, payouts
from tests.support import disputes as d

CPF = "52998224725"
E2E_ID = "E1234567820261125120000000000042"


def _found(app, account_id: str, typed: str, mode: KeyMode = KeyMode.TEST) -> set[str]:
    with app.app_context():
        rows, total = list_payments(
            account_id, mode, PaymentQuery(limit=100, search=search.search_text(typed))
        )
        assert total == len(rows)
        return {row.id for row in rows}


@pytest.fixture
def ledger_of_sales(app, client):
    """Three charges of one account, and one of another account with the same payer."""
    account_id = factories.make_account(app)
    key = factories.make_api_key(app, account_id)
    ana = charges.created(
        client,
        key,
        description="Pedido 1042 — mesa de jantar",
        customer={"name": "Ana Souza", "email": "ana.souza@example.com.br", "document": CPF},
    )
    bruno = charges.created(client, key, description="Pedido 77", customer={"name": "Bruno Lima"})
    odd = charges.created(client, key, description="Desconto 100% para 50_OFF")
    other_key = factories.make_api_key(app, factories.make_account(app, "Outra Loja"))
    charges.created(client, other_key, description="Pedido 1042", customer={"document": CPF})
    return account_id, {
        name: c["id"].removeprefix("ch_")
        for name, c in (("ana", ana), ("bruno", bruno), ("odd", odd))
    }


@pytest.mark.parametrize(
    ("typed", "who"),
    [
        ("pedido 1042", {"ana"}),  # the order, in the description, any case
        ("PEDIDO", {"ana", "bruno"}),
        ("souza", {"ana"}),  # the customer's name
        ("ana.souza@example", {"ana"}),  # the e-mail
        ("529.982.247-25", {"ana"}),  # the CPF as printed
        (CPF, {"ana"}),  # and as stored
        ("982247", {"ana"}),  # and a part of it
        ("100%", {"odd"}),  # a typed % is a percent sign, not a wildcard
        ("50_off", {"odd"}),  # and _ an underscore
        ("Carla", set()),
    ],
)
def test_what_a_person_remembers_finds_the_payment(app, ledger_of_sales, typed, who):
    account_id, ids = ledger_of_sales
    assert _found(app, account_id, typed) == {ids[name] for name in who}


def test_the_first_characters_of_an_id_find_it_with_or_without_its_prefix(app, ledger_of_sales):
    account_id, ids = ledger_of_sales
    assert _found(app, account_id, ids["bruno"][:8]) == {ids["bruno"]}
    assert _found(app, account_id, "ch_" + ids["bruno"][:8]) == {ids["bruno"]}


def test_a_search_never_reaches_another_mode(app, ledger_of_sales):
    account_id, _ = ledger_of_sales
    assert _found(app, account_id, "pedido", KeyMode.LIVE) == set()


def test_too_little_to_search_is_no_search():
    assert search.search_text("  ") is None and search.search_text("ab") is None
    assert search.search_text(" abc ") == "abc"
    assert len(search.search_text("x" * 500)) == search.MAX_SEARCH_LENGTH


def test_the_end_to_end_id_finds_a_paid_pix(app, client, ledger_of_sales):
    account_id, ids = ledger_of_sales
    with app.app_context():
        db.session.execute(
            sa.text("UPDATE transactions SET end_to_end_id = :e2e WHERE id = :id"),
            {"e2e": E2E_ID, "id": ids["bruno"]},
        )
        db.session.commit()
    assert _found(app, account_id, E2E_ID.lower()) == {ids["bruno"]}


def test_disputes_are_found_by_payer_and_charge(app, client, monkeypatch):
    from app.services.disputes.listing import CaseQuery, list_cases

    shop = payouts.funded_merchant(app, client, monkeypatch)
    paid = d.paid_charge(app, client, shop)
    case = d.opened(client, shop, paid["id"])
    with app.app_context():

        def found(typed):
            query = CaseQuery(search=search.search_text(typed))
            return [c.id for c in list_cases(shop.member.account_id, KeyMode.TEST, query).data]

        assert found(paid["id"][3:11]) == [case["id"]]
        assert found(case["id"][:10]) == [case["id"]]
        assert found("nobody-like-this") == []


def test_payouts_are_found_by_key_and_description(app, client, monkeypatch):
    shop = payouts.funded_merchant(app, client, monkeypatch)
    response = payouts.request(client, shop, pixKey="financeiro@padaria.com.br")
    assert response.status_code == 201, response.get_json()
    payout_id = response.get_json()["id"]
    with app.app_context():

        def found(typed):
            rows, _ = payout_listing.list_payouts(
                shop.member.account_id, KeyMode.TEST, None, 1, 20, search.search_text(typed)
            )
            return [p.id for p in rows]

        assert found("financeiro@padaria") == [payout_id]
        assert found("saque semanal") == [payout_id]
        assert found(payout_id[:8]) == [payout_id]
        assert found("aluguel") == []


@pytest.mark.usefixtures("ledger_of_sales")
def test_on_postgresql_the_search_reads_its_trigram_index(app, is_postgres):
    if not is_postgres:
        pytest.skip("trigram indexes are PostgreSQL's")
    with app.app_context():
        db.session.execute(sa.text("SET LOCAL enable_seqscan = off"))
        condition = search.matching("souza", TRANSACTION_SEARCH_TEXT)
        statement = sa.select(sa.literal_column("id")).select_from(sa.table("transactions"))
        compiled = statement.where(condition).compile(
            db.engine, compile_kwargs={"literal_binds": True}
        )
        plan = "\n".join(db.session.execute(sa.text(f"EXPLAIN {compiled}")).scalars())
        db.session.rollback()
    assert "ix_transactions_search" in plan, plan
