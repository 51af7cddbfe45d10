"""CSV exports of the dashboard's lists, one way for all of them: the view hands a service's
`*_rows` generator (read-only, `EXPORT_CHUNK` rows per round trip, never committing) to
`csv_response`, which streams a line at a time, so a large export never sits in memory and
holds no lock.

Views give typed cells (text, `datetime`, `Money`, numbers) and the chosen `Sheet` writes
them: the plain CSV for programs (commas, amounts in minor units, times in UTC) or the
"Planilha (Excel Brasil)" a Brazilian finance team opens in Excel as it is (semicolons, reais
with a decimal comma, the account's time (São Paulo's or Lisbon's), UTF-8 with a BOM so Excel
reads the accents). Free text is guarded against spreadsheet formulas in both.
"""

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import Response, request, stream_with_context
from flask_babel import get_timezone

from app.formats.money import DECIMAL_COMMA, format_money

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs these as formulas
EXPORT_CHUNK = 500  # rows a service reads per round trip while a CSV streams
BYTE_ORDER_MARK = "\ufeff"


@dataclass(frozen=True)
class Money:
    """An amount cell: integer minor units of `currency` (None: no amount, an empty cell)."""

    amount: int | None
    currency: str


@dataclass(frozen=True)
class Sheet:
    """How an export is written: its `?format=` name, separator, cells and file name."""

    name: str
    delimiter: str
    money: Callable[[Money], str | int]
    moment: Callable[[datetime], str]
    prefix: str = ""
    suffix: str = ""


def utc_text(moment: datetime | None) -> str:
    """`2026-11-21T15:04:05Z`, or empty for no time."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def local_text(moment: datetime) -> str:
    """`21/11/2026 12:04:05`: the account's time (`i18n.select_timezone`) as Brazilian Excel
    reads a date and time."""
    return moment.astimezone(get_timezone()).strftime("%d/%m/%Y %H:%M:%S")


PLAIN = Sheet(
    name="csv",
    delimiter=",",
    money=lambda cell: cell.amount,
    moment=utc_text,
)
EXCEL_BRAZIL = Sheet(
    name="planilha",
    delimiter=";",
    money=lambda cell: format_money(cell.amount, None, DECIMAL_COMMA),
    moment=local_text,
    prefix=BYTE_ORDER_MARK,
    suffix="-planilha",
)
SHEETS = {sheet.name: sheet for sheet in (PLAIN, EXCEL_BRAZIL)}


def chosen_sheet() -> Sheet:
    """The sheet the link asked for (`?format=planilha`), the plain CSV otherwise."""
    return SHEETS.get(request.args.get("format", ""), PLAIN)


def csv_response(columns: tuple[str, ...], rows: Iterable[tuple], filename: str) -> Response:
    """A download of the header and the rows in the sheet the link asked for
    (`chosen_sheet`), each line sent as soon as it is made."""
    sheet = chosen_sheet()
    stem, dot, extension = filename.rpartition(".")
    return Response(
        stream_with_context(csv_lines(columns, rows, sheet)),
        mimetype="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="{stem}{sheet.suffix}{dot}{extension}"'
        },
    )


def csv_lines(
    columns: tuple[str, ...], rows: Iterable[tuple], sheet: Sheet = PLAIN
) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sheet.delimiter)
    buffer.write(sheet.prefix)
    writer.writerow(columns)
    yield _taken(buffer)
    for values in rows:
        writer.writerow([_cell(value, sheet) for value in values])
        yield _taken(buffer)


def spreadsheet_cell(value: str) -> str:
    """Text a spreadsheet shows as text, never runs as a formula."""
    return "'" + value if value.startswith(FORMULA_PREFIXES) else value


def _taken(buffer: io.StringIO) -> str:
    """What the buffer holds, leaving it empty for the next line."""
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def _cell(value: object, sheet: Sheet) -> object:
    if value is None:
        return ""
    if isinstance(value, Money):
        return "" if value.amount is None else sheet.money(value)
    if isinstance(value, datetime):
        return sheet.moment(value)
    if isinstance(value, str):
        return spreadsheet_cell(value)
    return value
