"""Finding a record by what a person remembers of it: one search box on the dashboard's
payments, disputes and payouts lists, typed as text.

Each list looks through one text per record, its columns lowercased and joined
(`models.base.search_text`: ids, the Pix end-to-end id, names, e-mails, documents,
descriptions, the PSP's reference). A record matches when that text contains what was
typed, ignoring case; or, for an id, what was typed without its `ch_`/`tx_` prefix (the 8
characters a list shows find the record); or, for a CPF/CNPJ, what was typed without its
`. - /` (documents are stored bare): `529.982.247-25`, `52998224725` and `982247` find the
same payer.

On PostgreSQL that text has a trigram index (migration 0012_search), which answers
`LIKE '%text%'` at a million rows; SQLite scans, as it does at its sizes.
"""

import sqlalchemy as sa

from app.formats.charges import CHARGE_ID_PREFIX
from app.formats.payments import TRANSACTION_ID_PREFIX
from app.pix.documents import strip_formatting

MAX_SEARCH_LENGTH = 100
# Fewer characters than this match too much to be worth a query, and a trigram index needs
# three to find anything.
MIN_SEARCH_LENGTH = 3
_LIKE_ESCAPE = "\\"


def search_text(typed: str | None) -> str | None:
    """The text to search for: trimmed, at most MAX_SEARCH_LENGTH characters; None when
    there is nothing (or too little) to search."""
    text = (typed or "").strip()[:MAX_SEARCH_LENGTH]
    return text if len(text) >= MIN_SEARCH_LENGTH else None


def matching(text: str, searched: str) -> sa.ColumnElement[bool]:
    """The condition a record whose `searched` text (a `search_text` expression, as SQL) is
    found by `text` meets (see the module docstring)."""
    haystack = sa.literal_column(searched)
    typed = text.lower()
    needles = {typed, typed.removeprefix(CHARGE_ID_PREFIX).removeprefix(TRANSACTION_ID_PREFIX)}
    document = strip_formatting(text).lower()
    if document.isalnum() and any(char.isdigit() for char in document):
        needles.add(document)
    return sa.or_(
        *(
            haystack.like(f"%{_escaped(needle)}%", escape=_LIKE_ESCAPE)
            for needle in sorted(needles)
            if needle
        )
    )


def _escaped(text: str) -> str:
    """`text` with LIKE's wildcards taken literally: a typed `%` or `_` finds itself."""
    return (
        text.replace(_LIKE_ESCAPE, _LIKE_ESCAPE * 2)
        .replace("%", _LIKE_ESCAPE + "%")
        .replace("_", _LIKE_ESCAPE + "_")
    )
