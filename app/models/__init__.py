"""SQLAlchemy models, one module per aggregate; imported here so Alembic sees every table."""

from app.models.account import Account, Membership, Role, User
from app.models.api_key import ApiKey, KeyMode
from app.models.audit import AuditLog
from app.models.auth_token import RevokedToken
from app.models.event import Event
from app.models.idempotency import IdempotencyKey

__all__ = [
    "Account",
    "ApiKey",
    "AuditLog",
    "Event",
    "IdempotencyKey",
    "KeyMode",
    "Membership",
    "RevokedToken",
    "Role",
    "User",
]
