"""Writing the audit trail; one function so every action is recorded the same way."""

from app.extensions import db
from app.models import AuditLog


def record(
    *,
    account_id: str,
    actor_user_id: str | None,
    action: str,
    subject_type: str,
    subject_id: str,
    details: dict | None = None,
) -> AuditLog:
    entry = AuditLog(
        account_id=account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        details=details or {},
    )
    db.session.add(entry)
    return entry
