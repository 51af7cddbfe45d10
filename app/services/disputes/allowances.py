"""Whether an action on a dispute case is allowed now ("may I"): the merchant's appeal,
acceptance and evidence, and an outcome that would send money to the payer. The actions call
`require()`; the dashboard shows a button exactly when it is allowed."""

from app.errors import Conflict, InvalidRequest
from app.marks import translatable
from app.models import DisputeCase, DisputeStatus, MoneyOutcome
from app.services.allowances import ALLOWED, Allowance, refused

NOT_OPEN = "med_case_not_open"
UNDER_REVIEW = "med_case_under_review"
NOT_OPEN_REFUSALS = {
    "accepted": translatable("Only an open case can be accepted; this one is %(status)s."),
    "appealed": translatable("Only an open case can be appealed; this one is %(status)s."),
}


def appealability(case: DisputeCase) -> Allowance:
    """May the merchant appeal? Once per case, while it is open: an appealed case waits for
    the decision, a decided one is over."""
    return _still_open(case, "appealed")


def acceptability(case: DisputeCase) -> Allowance:
    """May the merchant accept (lose) the case? While it is open and its amount is settled."""
    return _still_open(case, "accepted") & outcome_allowance(case, MoneyOutcome.LOST)


def attachability(case: DisputeCase) -> Allowance:
    """May evidence be attached? Until the case is decided: an appeal is judged on it."""
    if case.is_final:
        return refused(
            Conflict(
                translatable("The case is %(status)s; evidence can no longer be attached."),
                values={"status": case.status},
                code=NOT_OPEN,
            )
        )
    return ALLOWED


def outcome_allowance(case: DisputeCase, outcome: MoneyOutcome) -> Allowance:
    """May the case end with `outcome`? A case whose amount differs from the charge's held
    nothing: until operations confirm the amount (and hold it), no outcome may send money to
    the payer."""
    if case.under_review and outcome is not MoneyOutcome.REFUNDED_TO_MERCHANT:
        return refused(
            Conflict(
                translatable(
                    "The reported amount differs from the charge's; our operations team must "
                    "confirm the disputed amount before the case can be lost."
                ),
                code=UNDER_REVIEW,
            )
        )
    return ALLOWED


def _still_open(case: DisputeCase, becoming: str) -> Allowance:
    """The contract fixes this refusal at 400 (appealing or accepting a case that is not
    open); every other action a decided case no longer allows is a 409."""
    if case.status is DisputeStatus.OPEN:
        return ALLOWED
    return refused(
        InvalidRequest(NOT_OPEN_REFUSALS[becoming], values={"status": case.status}, code=NOT_OPEN)
    )
