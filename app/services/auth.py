"""Dashboard JWTs and the revocation list that logout writes (for JWTs and dashboard sessions).

The algorithm is pinned (HS256) and `exp`, `iat`, `sub`, `jti` and `account` are required, so
an `alg: none` token or one without an expiry is refused. Tokens are signed with JWT_SECRET;
keys in JWT_PREVIOUS_SECRETS still verify, so the key rotates without signing everyone out:
put the new key in JWT_SECRET and the old one in JWT_PREVIOUS_SECRETS for a token lifetime.
Membership and role are read again from the database on every request: removing someone from
an account takes effect at once.
"""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
import sqlalchemy as sa
from flask import current_app

from app.errors import InvalidRequest, PermissionDenied, Unauthorized
from app.extensions import db
from app.marks import translatable
from app.models import Membership, RevokedToken, User
from app.models.base import utcnow
from app.services import accounts

JWT_ALGORITHM = "HS256"
REQUIRED_CLAIMS = ["sub", "account", "role", "jti", "iat", "exp"]
STAFF_ACCOUNT_CLAIM = "platform"  # a staff token names no merchant account
STAFF_ROLE = "STAFF"


@dataclass(frozen=True)
class IssuedToken:
    """A signed token; `membership` is None for a platform staff token (no account)."""

    token: str
    expires_at: datetime
    user: User
    membership: Membership | None


@dataclass(frozen=True)
class TokenIdentity:
    user: User
    membership: Membership
    claims: dict


def login(email: str, password: str, account_id: str | None) -> IssuedToken:
    """Check the password, pick the account, and issue a token for it."""
    user = accounts.authenticate(email, password)
    if user.is_staff and account_id is None and not accounts.active_memberships(user):
        return _issue(user, STAFF_ACCOUNT_CLAIM, STAFF_ROLE, None)
    membership = choose_membership(user, account_id)
    return issue_token(membership)


def choose_membership(user: User, account_id: str | None) -> Membership:
    """The account to log into: the one asked for, or the only one the user has."""
    memberships = accounts.active_memberships(user)
    if account_id is not None:
        for membership in memberships:
            if membership.account_id == account_id:
                return membership
        raise Unauthorized(translatable("Invalid e-mail or password."))
    if len(memberships) == 1:
        return memberships[0]
    if not memberships:
        raise Unauthorized(translatable("This user belongs to no active account."))
    raise InvalidRequest(
        "This user belongs to several accounts; send accountId to choose one.",
        code="account_selection_required",
        param="accountId",
        details=[
            {"param": "accountId", "message": f"{m.account_id} ({m.account.name}, {m.role})"}
            for m in memberships
        ],
    )


def issue_token(membership: Membership) -> IssuedToken:
    return _issue(membership.user, membership.account_id, str(membership.role), membership)


def _issue(user: User, account: str, role: str, membership: Membership | None) -> IssuedToken:
    issued_at = utcnow().replace(microsecond=0)
    expires_at = issued_at + timedelta(seconds=current_app.config["JWT_LIFETIME_SECONDS"])
    claims = {
        "sub": user.id,
        "account": account,
        "role": role,
        "jti": uuid.uuid4().hex,
        "iat": issued_at,
        "exp": expires_at,
    }
    token = jwt.encode(claims, current_app.config["JWT_SECRET"], algorithm=JWT_ALGORITHM)
    return IssuedToken(token=token, expires_at=expires_at, user=user, membership=membership)


def authenticate_token(token: str) -> TokenIdentity:
    """The user and membership behind a valid, unrevoked token, or Unauthorized."""
    claims = _verified_claims(token)
    membership = accounts.active_membership(claims["sub"], claims["account"])
    if membership is None:
        raise Unauthorized()
    return TokenIdentity(user=membership.user, membership=membership, claims=claims)


def authenticate_staff_token(token: str) -> User:
    """The active platform staff user behind a valid, unrevoked staff token.

    Only a staff login qualifies, never a token for a merchant account (a staff member who
    also belongs to an account cannot act on it here); the user is re-read, so removing the
    staff flag ends access at once. A valid token that is not a staff token is 403.
    """
    claims = _verified_claims(token)
    user = db.session.get(User, claims["sub"])
    if user is None or not user.active:
        raise Unauthorized()
    if claims["account"] != STAFF_ACCOUNT_CLAIM or not user.is_staff:
        raise PermissionDenied(
            "This route needs a platform staff token (log in as staff without an account).",
            code="staff_token_required",
        )
    return user


def _verified_claims(token: str) -> dict:
    claims = _decoded(token)
    if is_revoked(claims["jti"]):
        raise Unauthorized("The token has been revoked; log in again.")
    return claims


def _decoded(token: str) -> dict:
    """The claims of a token signed with the current key or a previous one."""
    keys = [current_app.config["JWT_SECRET"], *current_app.config.get("JWT_PREVIOUS_SECRETS", [])]
    for key in keys:
        try:
            return jwt.decode(
                token, key, algorithms=[JWT_ALGORITHM], options={"require": REQUIRED_CLAIMS}
            )
        except jwt.InvalidSignatureError:
            continue
        except jwt.ExpiredSignatureError:
            raise Unauthorized("The token has expired; log in again.") from None
        except jwt.InvalidTokenError:
            raise Unauthorized() from None
    raise Unauthorized()


def revoke_token(claims: dict) -> None:
    """End a JWT before its expiry (API logout)."""
    revoke(claims["jti"], datetime.fromtimestamp(claims["exp"], tz=UTC))


def revoke(token_id: str, expires_at: datetime) -> None:
    """End a JWT (`jti`) or dashboard session (`sid`); kept until it would have expired."""
    if not is_revoked(token_id):
        db.session.add(RevokedToken(jti=token_id, expires_at=expires_at))


def is_revoked(token_id: str) -> bool:
    return db.session.get(RevokedToken, token_id) is not None


def prune_revoked_tokens(now: datetime | None = None) -> int:
    """Forget revocations of tokens that have expired anyway; returns how many."""
    result = db.session.execute(
        sa.delete(RevokedToken).where(RevokedToken.expires_at < (now or utcnow()))
    )
    return result.rowcount
