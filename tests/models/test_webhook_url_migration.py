"""Migration 0010 (issue 21) adds the unique index that keeps one endpoint per URL in an
account and mode, among endpoints not deleted. Endpoints that already share a URL stop the
upgrade, listed, rather than being deleted: each has its own secret, and only the merchant
knows which one their receiver checks."""

import uuid
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic import command
from flask_migrate import upgrade

from app import create_app
from app.config import engine_options
from app.extensions import db
from app.models import EndpointStatus, KeyMode, WebhookEndpoint

URL = "https://hooks.example.com/acme"


@pytest.fixture
def before_0010(tmp_path):
    """An app on a database migrated up to 0009."""
    url = f"sqlite:///{tmp_path}/upgrade.db"
    application = create_app(
        {
            "APP_ENV": "testing",
            "SQLALCHEMY_DATABASE_URI": url,
            "SQLALCHEMY_ENGINE_OPTIONS": engine_options(url),
        }
    )
    with application.app_context():
        upgrade(revision="0009_psp_notices")
    return application


def _account(app) -> str:
    """An account as the schema at 0009 holds it (the models have columns added since)."""
    values = {
        "id": str(uuid.uuid4()),
        "name": "Loja Teste",
        "city": "Sao Paulo",
        "charge_expires_in": 3600,
        "cnpj_checksum_waiver": False,
        "withdrawals_auto_approve": False,
        "active": True,
        "created_at": datetime.now(UTC),
    }
    with app.app_context():
        accounts = sa.Table("accounts", sa.MetaData(), autoload_with=db.engine)
        db.session.execute(
            accounts.insert().values({k: v for k, v in values.items() if k in accounts.c})
        )
        db.session.commit()
    return values["id"]


def _endpoint(app, account_id: str, url: str, deleted: bool = False) -> str:
    with app.app_context():
        endpoint = WebhookEndpoint(
            account_id=account_id,
            mode=KeyMode.LIVE,
            url=url,
            events=["charge.paid"],
            status=EndpointStatus.INACTIVE if deleted else EndpointStatus.ACTIVE,
            secret_ciphertext="not used here",
            deleted_at=datetime(2026, 11, 1, tzinfo=UTC) if deleted else None,
        )
        db.session.add(endpoint)
        db.session.commit()
        return endpoint.id


def _upgrade(app) -> None:
    """`flask_migrate.upgrade` without its catch: a migration's error is raised, not logged."""
    with app.app_context():
        try:
            command.upgrade(app.extensions["migrate"].migrate.get_config(), "head")
        finally:
            db.session.remove()


def test_endpoints_sharing_a_url_stop_the_upgrade_listed(before_0010):
    account_id = _account(before_0010)
    twins = [_endpoint(before_0010, account_id, URL) for _ in range(2)]
    _endpoint(before_0010, account_id, URL + "/other")
    with pytest.raises(RuntimeError) as refused:
        _upgrade(before_0010)
    first, *listed = str(refused.value).splitlines()
    assert "share a URL in one account and mode; delete all but one of each" in first
    assert listed == [f"  account {account_id} LIVE {URL}: endpoint {twin}" for twin in twins]
    with before_0010.app_context():
        assert db.session.scalar(sa.text("SELECT version_num FROM alembic_version")) == (
            "0009_psp_notices"
        )


def test_a_deleted_twin_does_not_stop_it_and_the_index_then_refuses_a_new_one(before_0010):
    account_id = _account(before_0010)
    _endpoint(before_0010, account_id, URL, deleted=True)
    _endpoint(before_0010, account_id, URL)
    _upgrade(before_0010)
    _endpoint(before_0010, account_id, URL, deleted=True)  # deleted ones are not counted
    with pytest.raises(Exception, match="UNIQUE constraint failed"):
        _endpoint(before_0010, account_id, URL)
