"""The migrations are the schema: applying them yields exactly what the models describe."""

import sqlalchemy as sa
from flask_migrate import check, upgrade

from app import create_app
from app.config import engine_options
from app.extensions import db


def test_models_and_migrations_agree(app):
    with app.app_context():
        check()


def test_pending_money_from_before_release_tranches_is_released(tmp_path):
    """Upgrading 0002 → 0003 gives every pending balance a tranche, so none is stuck."""
    url = f"sqlite:///{tmp_path}/upgrade.db"
    application = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": url,
            "SQLALCHEMY_ENGINE_OPTIONS": engine_options(url),
        }
    )
    with application.app_context():
        upgrade(revision="0002_charges_ledger")
        db.session.execute(
            sa.text(
                "INSERT INTO accounts (id, name, city, charge_expires_in, active, created_at) "
                "VALUES ('a1', 'Old', 'Sao Paulo', 3600, 1, '2026-11-01 00:00:00')"
            )
        )
        db.session.execute(
            sa.text(
                "INSERT INTO wallets (id, account_id, mode, currency, wallet_type, available, "
                "pending, retained, created_at, updated_at) VALUES ('w1', 'a1', 'TEST', 'BRL', "
                "'OPERATIONAL', 0, 9901, 0, '2026-11-01 00:00:00', '2026-11-01 00:00:00')"
            )
        )
        db.session.commit()
        upgrade()
        tranche = db.session.execute(
            sa.text("SELECT wallet_id, amount, released_at FROM settlement_releases")
        ).one()
        db.session.remove()
    assert tuple(tranche) == ("w1", 9901, None)
