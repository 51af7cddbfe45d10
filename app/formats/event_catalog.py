"""The events merchants can subscribe to: the authoritative list behind the catalog route, the
validation of endpoint subscriptions and the choice of envelope. Legacy names are flagged;
aliases expand.

A public wire format like the envelopes beside it, so `formats` and `services` both read it
from here."""

from dataclasses import dataclass

from app.marks import translatable


@dataclass(frozen=True)
class CatalogEntry:
    event: str
    description: str
    legacy: bool = False


CANONICAL = (
    CatalogEntry("charge.created", translatable("A charge was created and awaits payment.")),
    CatalogEntry("charge.paid", translatable("A charge was paid and confirmed.")),
    CatalogEntry("charge.failed", translatable("A charge failed or was cancelled.")),
    CatalogEntry("charge.expired", translatable("A charge expired unpaid.")),
    CatalogEntry("payout.created", translatable("A payout was requested.")),
    CatalogEntry("payout.paid", translatable("A payout was settled.")),
    CatalogEntry("payout.failed", translatable("A payout failed, was rejected or was cancelled.")),
)
DISPUTES = (
    CatalogEntry(
        "med_case.created", translatable("A dispute (MED) case was opened on a paid charge.")
    ),
    CatalogEntry(
        "med_case.updated", translatable("A dispute case changed status or evidence was requested.")
    ),
    CatalogEntry(
        "med.resolved", translatable("A dispute case's money reached its final destination.")
    ),
)
LEGACY = (
    CatalogEntry("payment.created", translatable("A transaction was created."), legacy=True),
    CatalogEntry(
        "payment.completed", translatable("A transaction was paid (PAID or APPROVED)."), legacy=True
    ),
    CatalogEntry(
        "payment.failed",
        translatable("A transaction was refused, cancelled, expired or disputed."),
        legacy=True,
    ),
    CatalogEntry("payment.expired", translatable("A transaction expired unpaid."), legacy=True),
    CatalogEntry("payment.refunded", translatable("A transaction was refunded."), legacy=True),
    CatalogEntry("withdrawal.created", translatable("A withdrawal was requested."), legacy=True),
    CatalogEntry("withdrawal.completed", translatable("A withdrawal was completed."), legacy=True),
    CatalogEntry(
        "withdrawal.failed",
        translatable("A withdrawal failed, was rejected or cancelled."),
        legacy=True,
    ),
)
ALIASES = {
    "payment.status_changed": (
        "payment.created",
        "payment.completed",
        "payment.failed",
        "payment.expired",
        "payment.refunded",
    ),
    "withdrawal.status_changed": ("withdrawal.completed", "withdrawal.failed"),
}
ALIAS_ENTRIES = tuple(
    CatalogEntry(alias, f"Alias for {', '.join(names)}.", legacy=True)
    for alias, names in ALIASES.items()
)
CATALOG = CANONICAL + DISPUTES + LEGACY + ALIAS_ENTRIES
SUBSCRIBABLE = frozenset(entry.event for entry in CATALOG)
LEGACY_EVENTS = frozenset(entry.event for entry in LEGACY)
DELIVERABLE = tuple(entry.event for entry in CANONICAL + DISPUTES + LEGACY)  # aliases aside
DELIVERABLE_EVENTS = frozenset(DELIVERABLE)


def expand(names: list[str]) -> frozenset[str]:
    """The concrete event names a subscription covers (aliases replaced by what they mean)."""
    expanded: set[str] = set()
    for name in names:
        expanded.update(ALIASES.get(name, (name,)))
    return frozenset(expanded)


def unknown(names: list[str]) -> list[str]:
    return sorted(set(names) - SUBSCRIBABLE)
