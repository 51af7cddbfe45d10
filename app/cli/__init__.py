"""Operator commands: `flask accounts …`, `flask users …`, `flask demo seed`."""

import json
from functools import wraps

import click
from flask import Flask
from flask.cli import AppGroup

from app.errors import ApiError
from app.extensions import db
from app.models import Account, KeyMode, Role
from app.services import accounts, api_keys, demo

accounts_cli = AppGroup("accounts", help="Merchant accounts.")
users_cli = AppGroup("users", help="People who log in to the dashboard.")
demo_cli = AppGroup("demo", help="A demo merchant for trying the service.")


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
@_fail_on_api_error
def create_account(name: str, test_key: bool) -> None:
    """Create a merchant account and print its id."""
    account = accounts.create_account(name)
    issued = (
        api_keys.issue_for_account(account.id, label="created by CLI", mode=KeyMode.TEST)
        if test_key
        else None
    )
    db.session.commit()
    click.echo(f"account_id={account.id}")
    if issued:
        click.echo(f"test_api_key={issued.cleartext}")


@users_cli.command("add")
@click.argument("email")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@click.option("--name", default=None)
@click.option("--account", "account_id", default=None, help="Account id to add the user to.")
@click.option(
    "--role",
    type=click.Choice([r.value for r in Role]),
    default=Role.MEMBER.value,
    show_default=True,
)
@click.option("--staff", is_flag=True, help="Platform staff (back-office) user.")
@_fail_on_api_error
def add_user(
    email: str, password: str, name: str | None, account_id: str | None, role: str, staff: bool
) -> None:
    """Add a user (or, for an existing e-mail, a membership) and print the user id."""
    user = accounts.find_user_by_email(email) or accounts.add_user(
        email, password, name=name, is_staff=staff
    )
    if account_id:
        account = db.session.get(Account, account_id)
        if account is None:
            raise click.ClickException(f"No account {account_id}.")
        accounts.add_membership(account, user, Role(role))
    db.session.commit()
    click.echo(f"user_id={user.id}")


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


def register_cli(app: Flask) -> None:
    for group in (accounts_cli, users_cli, demo_cli):
        app.cli.add_command(group)
