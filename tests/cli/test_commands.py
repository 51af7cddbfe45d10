"""Operator commands: accounts, users and the idempotent demo seed."""

import json

import sqlalchemy as sa
from cryptography.fernet import Fernet

from app.extensions import db
from app.models import Account, AuditLog, KeyMode, Membership, User, WebhookEndpoint
from app.services import secrets_box
from app.services.webhooks import endpoints as webhook_endpoints


def _run(app, *args, input=None):
    result = app.test_cli_runner().invoke(args=list(args), input=input)
    assert result.exit_code == 0, result.output
    return result.output


def test_accounts_create_and_users_add(app, client):
    output = _run(app, "accounts", "create", "Padaria Central", "--test-key")
    account_id = output.split("account_id=")[1].split()[0]
    test_key = output.split("test_api_key=")[1].split()[0]
    assert (
        client.get("/v1/test-probe/whoami", headers={"apikey": test_key}).json["accountId"]
        == account_id
    )
    _run(
        app,
        "users",
        "add",
        "Dono@Padaria.example.com",
        "--password",
        "uma senha longa",
        "--account",
        account_id,
        "--role",
        "OWNER",
    )
    login = client.post(
        "/v1/auth/login", json={"email": "dono@padaria.example.com", "password": "uma senha longa"}
    )
    assert login.status_code == 200
    assert login.json["role"] == "OWNER"


def test_users_add_staff_prompts_for_the_password(app):
    _run(
        app,
        "users",
        "add",
        "ops@acmepay.example.com",
        "--staff",
        input="staff senha 123\nstaff senha 123\n",
    )
    with app.app_context():
        user = db.session.scalar(sa.select(User).where(User.email == "ops@acmepay.example.com"))
        assert user.is_staff is True
        assert user.password_hash.startswith("$argon2id$")


def test_users_add_refuses_bad_input_without_a_traceback(app):
    result = app.test_cli_runner().invoke(
        args=["users", "add", "ops@x.example.com", "--password", "short"]
    )
    assert result.exit_code != 0
    assert "at least 10 characters" in result.output
    result = app.test_cli_runner().invoke(
        args=[
            "users",
            "add",
            "a@x.example.com",
            "--password",
            "long enough pw",
            "--account",
            "nope",
        ]
    )
    assert result.exit_code != 0 and "No account nope" in result.output


def test_demo_seed_is_idempotent_and_prints_what_a_newcomer_needs(app, client):
    first = json.loads(_run(app, "demo", "seed", "--json"))
    second = json.loads(_run(app, "demo", "seed", "--json"))
    expected = {
        "account_id",
        "email",
        "password",
        "test_api_key",
        "live_api_key",
        "staff_email",
        "staff_password",
        "dashboard_url",
    }
    assert expected <= set(first)
    assert first["account_id"] == second["account_id"]
    assert first["test_api_key"] != second["test_api_key"]
    assert first["test_api_key"].startswith("ak_test_") and first["live_api_key"].startswith(
        "ak_live_"
    )
    for key in (second["test_api_key"], second["live_api_key"]):
        assert client.get("/v1/test-probe/whoami", headers={"apikey": key}).status_code == 200
    for key in (first["test_api_key"], first["live_api_key"]):
        assert client.get("/v1/test-probe/whoami", headers={"apikey": key}).status_code == 401
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Account)) == 1
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Membership)) == 1
        staff = db.session.scalar(sa.select(User).where(User.email == second["staff_email"]))
        assert staff.is_staff
    login = client.post(
        "/v1/auth/login", json={"email": second["email"], "password": second["password"]}
    )
    assert login.status_code == 200
    assert second["dashboard_url"].endswith("/dashboard/")
    text = _run(app, "demo", "seed")
    assert "Owner login:" in text and "Test API key: ak_test_" in text and "/dashboard/" in text


def test_users_add_never_changes_an_existing_user_silently(app, client):
    """Re-running `users add` for an existing OWNER neither demotes them nor drops options."""
    account_id = _run(app, "accounts", "create", "Mercado").split("account_id=")[1].split()[0]
    email = "dona@mercado.example.com"
    _run(
        app,
        "users",
        "add",
        email,
        "--password",
        "senha muito boa",
        "--account",
        account_id,
        "--role",
        "OWNER",
    )
    second_account = _run(app, "accounts", "create", "Filial").split("account_id=")[1].split()[0]
    _run(app, "users", "add", email, "--account", second_account)
    _run(app, "users", "add", email, "--account", account_id)
    with app.app_context():
        roles = dict(db.session.execute(sa.select(Membership.account_id, Membership.role)).all())
    assert roles == {account_id: "OWNER", second_account: "MEMBER"}
    for extra in (["--password", "outra senha longa"], ["--staff"], ["--name", "X"]):
        result = app.test_cli_runner().invoke(args=["users", "add", email, *extra])
        assert result.exit_code != 0 and "new users only" in result.output
    result = app.test_cli_runner().invoke(
        args=["users", "add", "x@y.example.com", "--password", "long enough pw", "--role", "ADMIN"]
    )
    assert result.exit_code != 0 and "--role needs --account" in result.output


def test_accounts_set_changes_contract_settings_with_an_audit_trail(app):
    """Can support switch an account's waiver, auto-approval and caps, and is it audited?"""
    account_id = _run(app, "accounts", "create", "Loja Contrato").split("account_id=")[1].split()[0]
    output = _run(
        app,
        "accounts",
        "set",
        account_id,
        "--cnpj-checksum-waiver",
        "--auto-approve-payouts",
        "--auto-approve-threshold",
        "0",
        "--payout-cap",
        "500000",
    )
    assert "cnpj_checksum_waiver: False -> True" in output
    assert "withdrawals_auto_approve_threshold: None -> 0" in output
    assert "nothing changed" in _run(app, "accounts", "set", account_id, "--payout-cap", "500000")
    with app.app_context():
        account = db.session.get(Account, account_id)
        assert account.cnpj_checksum_waiver and account.withdrawals_auto_approve
        assert (account.withdrawals_auto_approve_threshold, account.payout_transaction_cap) == (
            0,
            500_000,
        )
        trail = db.session.scalars(
            sa.select(AuditLog).where(AuditLog.action == "account.settings_changed")
        ).all()
    assert len(trail) == 1 and trail[0].details["via"] == "cli"
    failed = app.test_cli_runner().invoke(args=["accounts", "set", "missing", "--city", "Recife"])
    assert failed.exit_code != 0 and "No account missing" in failed.output


def test_secrets_reencrypt_moves_webhook_secrets_to_the_newest_key(app, monkeypatch):
    """Key rotation: add a key in front, re-encrypt, drop the old key; secrets still read."""
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    monkeypatch.setitem(app.config, "SECRETS_ENCRYPTION_KEYS", old_key)
    account_id = _run(app, "accounts", "create", "Loja Chaves").split("account_id=")[1].split()[0]
    with app.app_context():
        endpoint, secret = webhook_endpoints.create_endpoint(
            account_id, KeyMode.TEST, "http://127.0.0.1:9/hooks", ["charge.paid"]
        )
        db.session.commit()
        endpoint_id = endpoint.id
    monkeypatch.setitem(app.config, "SECRETS_ENCRYPTION_KEYS", f"{new_key},{old_key}")
    assert "re-encrypted 1 webhook secrets" in _run(app, "secrets", "reencrypt")
    monkeypatch.setitem(app.config, "SECRETS_ENCRYPTION_KEYS", new_key)
    with app.app_context():
        stored = db.session.get(WebhookEndpoint, endpoint_id).secret_ciphertext
        assert secrets_box.decrypt(stored) == secret
