"""Accounts (merchants), users and memberships, and checking who someone is by password.

Passwords are hashed with Argon2id (argon2-cffi defaults, RFC 9106 low-memory profile);
hashes made with older parameters are upgraded at the next successful login.
"""

from dataclasses import dataclass

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from email_validator import EmailNotValidError, validate_email

from app.errors import InvalidRequest, Unauthorized
from app.extensions import db
from app.i18n import COUNTRY_LOCALES, LOCALES
from app.marks import translatable
from app.models import Account, ApiKey, Membership, Role, User
from app.models.account import DEFAULT_COUNTRY, MANAGING_ROLES
from app.services import audit
from app.services.allowances import manager_allowance

MIN_PASSWORD_LENGTH = 10
_hasher = PasswordHasher()
# Verified against when the e-mail is unknown, so both failures take the same time.
_DUMMY_HASH = _hasher.hash("not-a-real-password")


def normalise_email(email: str) -> str:
    try:
        return validate_email(email.strip(), check_deliverability=False).normalized.lower()
    except EmailNotValidError as exc:
        raise InvalidRequest(str(exc), param="email") from exc


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidRequest(
            translatable("Passwords need at least %(min)s characters."),
            values={"min": MIN_PASSWORD_LENGTH},
            param="password",
        )
    return _hasher.hash(password)


def create_account(name: str, country: str = DEFAULT_COUNTRY) -> Account:
    """A merchant in Brazil (BR) or Portugal (PT): the country picks its documents' language."""
    name = name.strip()
    if not name:
        raise InvalidRequest("An account needs a name.", param="name")
    if country not in COUNTRY_LOCALES:
        raise InvalidRequest(
            f"country is one of {', '.join(sorted(COUNTRY_LOCALES))}.", param="country"
        )
    account = Account(name=name, country=country)
    db.session.add(account)
    db.session.flush()
    return account


def find_user_by_email(email: str) -> User | None:
    return db.session.scalar(sa.select(User).where(User.email == normalise_email(email)))


def add_user(email: str, password: str, *, name: str | None = None, is_staff: bool = False) -> User:
    """Create a user; an e-mail already in use is refused."""
    email = normalise_email(email)
    if db.session.scalar(sa.select(User.id).where(User.email == email)):
        raise InvalidRequest(translatable("A user with this e-mail already exists."), param="email")
    user = User(email=email, password_hash=hash_password(password), name=name, is_staff=is_staff)
    db.session.add(user)
    db.session.flush()
    return user


def choose_language(user: User, locale: str) -> None:
    """The language `user`'s dashboard pages are written in, from now on, on any browser."""
    if locale not in LOCALES:
        raise InvalidRequest(f"locale is one of {', '.join(LOCALES)}.", param="locale")
    user.locale = locale


def set_password(user: User, password: str) -> None:
    user.password_hash = hash_password(password)


def add_membership(account: Account, user: User, role: Role | None = None) -> Membership:
    """Make a user an active member of an account.

    A new member gets `role` (MEMBER when none is given); an existing member keeps their role
    unless one is given, so re-running a command never demotes an OWNER by accident.
    """
    membership = db.session.scalar(
        sa.select(Membership).where(
            Membership.account_id == account.id, Membership.user_id == user.id
        )
    )
    if membership is None:
        membership = Membership(account=account, user=user, role=role or Role.MEMBER)
        db.session.add(membership)
    elif role is not None:
        membership.role = role
    membership.active = True
    db.session.flush()
    return membership


def active_memberships(user: User) -> list[Membership]:
    """The accounts a user may act in: active membership in an active account."""
    return list(
        db.session.scalars(
            sa.select(Membership)
            .join(Account)
            .where(Membership.user_id == user.id, Membership.active, Account.active)
            .order_by(Account.name, Account.id)
        )
    )


def active_membership(user_id: str, account_id: str) -> Membership | None:
    return db.session.scalar(
        sa.select(Membership)
        .join(Account)
        .join(User)
        .where(
            Membership.user_id == user_id,
            Membership.account_id == account_id,
            Membership.active,
            Account.active,
            User.active,
        )
    )


def manager_emails(account_id: str) -> list[str]:
    """Where account notices go (failing webhooks, disputes): its active OWNERs and ADMINs."""
    return list(
        db.session.scalars(
            sa.select(User.email)
            .join(Membership, Membership.user_id == User.id)
            .where(
                Membership.account_id == account_id,
                Membership.active.is_(True),
                Membership.role.in_(MANAGING_ROLES),
            )
            .order_by(User.email)
        )
    )


def authenticate(email: str, password: str) -> User:
    """The active user with this e-mail and password, or Unauthorized (one message for all)."""
    failure = Unauthorized("Invalid e-mail or password.")
    try:
        user = find_user_by_email(email)
    except InvalidRequest:
        user = None
    try:
        _hasher.verify(user.password_hash if user else _DUMMY_HASH, password)
    except (VerificationError, InvalidHashError):
        raise failure from None
    if user is None or not user.active:
        raise failure
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
    return user


@dataclass(frozen=True)
class AccountSummary:
    account: Account
    active_members: int
    active_api_keys: int


def platform_accounts() -> list[AccountSummary]:
    """Every merchant account with its active members and keys, for platform staff."""
    members = (
        sa.select(sa.func.count(Membership.id))
        .where(Membership.account_id == Account.id, Membership.active)
        .scalar_subquery()
    )
    keys = (
        sa.select(sa.func.count(ApiKey.id))
        .where(ApiKey.account_id == Account.id, ApiKey.revoked_at.is_(None))
        .scalar_subquery()
    )
    rows = db.session.execute(
        sa.select(Account, members, keys).order_by(Account.created_at.desc(), Account.id)
    )
    return [AccountSummary(account, int(m), int(k)) for account, m, k in rows]


ACCOUNT_SETTINGS = frozenset(
    {
        "city",
        "charge_expires_in",
        "cnpj_checksum_waiver",
        "withdrawals_auto_approve",
        "withdrawals_auto_approve_threshold",
        "payout_transaction_cap",
        "payout_daily_cap",
    }
)


def update_settings(account: Account, changes: dict, *, via: str) -> dict:
    """Support's switches on an account (contract limits, waivers), audited with old and new
    values; returns what changed."""
    unknown = set(changes) - ACCOUNT_SETTINGS
    if unknown:
        raise InvalidRequest(f"Unknown account settings: {', '.join(sorted(unknown))}.")
    changed = {
        name: {"from": getattr(account, name), "to": value}
        for name, value in changes.items()
        if getattr(account, name) != value
    }
    for name, change in changed.items():
        setattr(account, name, change["to"])
    if changed:
        audit.record(
            account_id=account.id,
            actor_user_id=None,
            action="account.settings_changed",
            subject_type="account",
            subject_id=account.id,
            details={"via": via, "changes": changed},
        )
    return changed


def require_manager(membership: Membership, refusal: str, code: str) -> None:
    """Managing keys, payouts and webhooks is for the account's OWNER and ADMIN only."""
    manager_allowance(membership, refusal, code).require()
