"""Operator commands: `flask accounts …`, `users …`, `demo seed`, `ledger check`,
`secrets reencrypt`, `payments rebuild-totals` and `api-pix register-webhook`."""

import json
from functools import wraps

import click
from flask import Flask
from flask.cli import AppGroup

from app.cli.api_pix import api_pix_cli
from app.errors import ApiError
from app.extensions import db
from app.i18n import COUNTRY_LOCALES
from app.models import Account, KeyMode, Role
from app.models.account import DEFAULT_COUNTRY
from app.services import accounts, api_keys, demo, dispute_holds, ledger
from app.services.transactions import payment_totals
from app.services.webhooks import endpoints as webhook_endpoints

accounts_cli = AppGroup("accounts", help="Merchant accounts.")
users_cli = AppGroup("users", help="People who log in to the dashboard.")
demo_cli = AppGroup("demo", help="A demo merchant for trying the service.")
ledger_cli = AppGroup("ledger", help="The double-entry ledger behind the wallets.")
secrets_cli = AppGroup("secrets", help="Secrets kept encrypted at rest.")
payments_cli = AppGroup("payments", help="Payments and their statistics.")


def _fail_on_api_error(func):
    """Show a service's refusal as a CLI error instead of a traceback."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ApiError as exc:
            db.session.rollback()
            raise click.ClickException(exc.message) from exc

    return wrapper


@accounts_cli.command("create")
@click.argument("name")
@click.option("--test-key/--no-test-key", default=False, help="Also issue a test API key.")
@click.option(
    "--country",
    type=click.Choice(sorted(COUNTRY_LOCALES)),
    default=DEFAULT_COUNTRY,
    help="Where the merchant is: picks its documents' language and its members' default.",
)
@_fail_on_api_error
def create_account(name: str, test_key: bool, country: str) -> None:
    """Create a merchant account and print its id."""
    account = accounts.create_account(name, country)
    issued = (
        api_keys.issue_for_account(account.id, label="created by CLI", mode=KeyMode.TEST)
        if test_key
        else None
    )
    db.session.commit()
    click.echo(f"account_id={account.id}")
    if issued:
        click.echo(f"test_api_key={issued.cleartext}")


@accounts_cli.command("set")
@click.argument("account_id")
@click.option("--city", default=None, help="City in the account's BR Codes.")
@click.option("--charge-expires-in", type=click.IntRange(60, 86_400), default=None)
@click.option(
    "--cnpj-checksum-waiver/--no-cnpj-checksum-waiver",
    default=None,
    help="Honour strictCnpj=false for this account.",
)
@click.option("--auto-approve-payouts/--no-auto-approve-payouts", default=None)
@click.option("--auto-approve-threshold", type=click.IntRange(min=0), default=None)
@click.option("--payout-cap", type=click.IntRange(min=1), default=None, help="Per payout.")
@click.option("--payout-daily-cap", type=click.IntRange(min=1), default=None)
@_fail_on_api_error
def set_account(account_id: str, **options) -> None:
    """Change an account's contract settings (support only); audited; prints what changed."""
    names = {
        "auto_approve_payouts": "withdrawals_auto_approve",
        "auto_approve_threshold": "withdrawals_auto_approve_threshold",
        "payout_cap": "payout_transaction_cap",
    }
    changes = {
        names.get(option, option): value for option, value in options.items() if value is not None
    }
    changed = accounts.update_settings(_account_or_fail(account_id), changes, via="cli")
    db.session.commit()
    for name, change in changed.items():
        click.echo(f"{name}: {change['from']} -> {change['to']}")
    if not changed:
        click.echo("nothing changed")


@users_cli.command("add")
@click.argument("email")
@click.option("--password", default=None, help="For a new user; prompted for when omitted.")
@click.option("--name", default=None, help="For a new user.")
@click.option("--staff", is_flag=True, help="New user is platform staff (back-office).")
@click.option("--account", "account_id", default=None, help="Account id to add the user to.")
@click.option(
    "--role",
    type=click.Choice([r.value for r in Role]),
    default=None,
    help="Role in --account: MEMBER for a new member; an existing member's role is kept.",
)
@_fail_on_api_error
def add_user(
    email: str,
    password: str | None,
    name: str | None,
    staff: bool,
    account_id: str | None,
    role: str | None,
) -> None:
    """Add a user, or add an existing user to an account; prints the user id."""
    account = _account_or_fail(account_id) if account_id else None
    user = accounts.find_user_by_email(email)
    if user is None:
        password = password or click.prompt("Password", hide_input=True, confirmation_prompt=True)
        user = accounts.add_user(email, password, name=name, is_staff=staff)
    elif password or name or staff:
        raise click.ClickException(
            f"{email} already exists: --password, --name and --staff apply to new users only."
        )
    if account is not None:
        accounts.add_membership(account, user, Role(role) if role else None)
    elif role:
        raise click.ClickException("--role needs --account.")
    db.session.commit()
    click.echo(f"user_id={user.id}")


def _account_or_fail(account_id: str) -> Account:
    account = db.session.get(Account, account_id)
    if account is None:
        raise click.ClickException(f"No account {account_id}.")
    return account


@demo_cli.command("seed")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for scripts.")
def seed_demo(as_json: bool) -> None:
    """Create (or reuse) the demo merchant and print how to log in and call the API."""
    seeded = demo.seed()
    db.session.commit()
    if as_json:
        click.echo(json.dumps(seeded.as_dict()))
        return
    click.echo("\n".join(["Acme Pay demo merchant", *seeded.summary_lines()]))


@ledger_cli.command("check")
def check_ledger() -> None:
    """Prove every wallet equals its entries, every posting sums to zero and every undecided
    dispute holds exactly what is at risk; exit 1 if not."""
    problems = ledger.check() + dispute_holds.check()
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        raise SystemExit(1)
    click.echo(
        "ledger ok: every wallet matches its entries, every posting sums to zero and every "
        "open dispute holds what is at risk"
    )


@secrets_cli.command("reencrypt")
def reencrypt_secrets() -> None:
    """Re-encrypt webhook secrets under the first key of SECRETS_ENCRYPTION_KEYS."""
    count = webhook_endpoints.reencrypt_secrets()
    db.session.commit()
    click.echo(f"re-encrypted {count} webhook secrets with the newest key")


@payments_cli.command("rebuild-totals")
@click.option("--account", "account_id", help="Only this account (default: every account).")
def rebuild_payment_totals(account_id: str | None) -> None:
    """Recount the daily totals the stats read, from the transactions themselves (after rows
    were written around the application, e.g. loaded by SQL)."""
    counted = payment_totals.rebuild_totals(account_id)
    click.echo(f"counted {counted} transactions")


def register_cli(app: Flask) -> None:
    for group in (
        accounts_cli,
        users_cli,
        demo_cli,
        ledger_cli,
        secrets_cli,
        payments_cli,
        api_pix_cli,
    ):
        app.cli.add_command(group)
