"""CSV exports of the dashboard's lists, one way for all of them: the view hands a service's
`*_rows` generator (read-only, `EXPORT_CHUNK` rows per round trip, never committing) to
`csv_response`, which streams a line at a time, so a large export never sits in memory and
holds no lock. Free text is guarded against spreadsheet formulas, times are in UTC, amounts
in minor units."""

import csv
import io
import itertools
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from flask import Response, stream_with_context

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs these as formulas
EXPORT_CHUNK = 500  # rows a service reads per round trip while a CSV streams


def csv_response(columns: tuple[str, ...], rows: Iterable[tuple], filename: str) -> Response:
    """A download of the header and the rows, each line sent as soon as it is made."""
    return Response(
        stream_with_context(csv_lines(columns, rows)),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def csv_lines(columns: tuple[str, ...], rows: Iterable[tuple]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for values in itertools.chain([columns], rows):
        writer.writerow(values)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def spreadsheet_cell(value: str) -> str:
    """Text a spreadsheet shows as text, never runs as a formula."""
    return "'" + value if value.startswith(FORMULA_PREFIXES) else value


def utc_text(moment: datetime | None) -> str:
    """`2026-11-21T15:04:05Z`, or empty for no time."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
