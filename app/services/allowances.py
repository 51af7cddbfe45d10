"""What an object allows now: one answer shared by the API, the dashboard and the jobs.

Each domain service answers its own "may I" (may this payment be refunded, this case be
appealed, this payout be cancelled) in one function that returns an `Allowance`. The action
calls `require()` on it, so it refuses with exactly the error the question found; the
dashboard shows a button exactly when `allowed` is true, so it never offers an action that
the API would refuse.
"""

from dataclasses import dataclass

from app.errors import ApiError, PermissionDenied
from app.marks import translatable
from app.models.account import MANAGING_ROLES, Membership


@dataclass(frozen=True)
class Allowance:
    """Allowed, or refused with the error the action would raise."""

    refusal: ApiError | None = None

    @property
    def allowed(self) -> bool:
        return self.refusal is None

    @property
    def reason(self) -> str | None:
        """Why not, in the words the API would answer (None when allowed)."""
        return None if self.refusal is None else self.refusal.message

    def require(self) -> None:
        """Raise the refusal, if any."""
        if self.refusal is not None:
            raise self.refusal

    def __and__(self, other: "Allowance") -> "Allowance":
        """Both allowed; otherwise the first refusal."""
        return self if not self.allowed else other


ALLOWED = Allowance()


def refused(error: ApiError) -> Allowance:
    return Allowance(error)


def manager_allowance(
    membership: Membership | None,
    refusal: str = translatable("Only an owner or an admin of the account can do this."),
    code: str | None = None,
) -> Allowance:
    """Changes to money and settings are for OWNERs and ADMINs. `None` is an API key, which
    acts for the whole account. `refusal` and `code` keep each surface's own words."""
    if membership is None or (membership.active and membership.role in MANAGING_ROLES):
        return ALLOWED
    return refused(PermissionDenied(refusal, code=code))
