"""A small PDF writer for payment receipts and boleto bank slips.

The service must hand out real PDFs that any reader opens, and a PDF library at runtime would be
one more dependency to pin and patch for a few lines of text, some rules and one barcode. PDF 1.4
with the standard 14 fonts is simple enough to write directly: Helvetica needs no embedding,
WinAnsiEncoding (cp1252) covers Portuguese, and a single column that breaks pages on its own is
all the layout receipts and boletos need.
"""

import zlib
from datetime import UTC, datetime
from itertools import zip_longest

PAGE_WIDTH = 595  # A4, in points
PAGE_HEIGHT = 842
MARGIN = 50
CONTENT_WIDTH = PAGE_WIDTH - 2 * MARGIN
PRODUCER = "Acme Pay"

_LEADING = 1.25  # line height as a multiple of the font size
_HEADING_SIZE = 16
_FIELD_SIZE = 10
_LABEL_COLUMN = 150  # field(): values start this far right of the margin
_LABEL_GAP = 10  # field(): least room between a label and its value
_RULE_SPACE = 8  # rule(): vertical room taken, the line drawn in its middle
_ITF_MAX_UNIT = 1.0  # narrow bar width in points, smaller when the barcode would not fit

# Glyph widths in 1/1000 em for each cp1252 code, from Adobe's Core 14 AFM files
# (0 for control characters and codes WinAnsiEncoding leaves undefined).
# fmt: off
_HELVETICA = (0,) * 32 + (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, 0,
    556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
    0, 222, 222, 333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667,
    278, 333, 556, 556, 556, 556, 260, 556, 333, 737, 370, 556, 584, 333, 737, 333,
    400, 584, 333, 333, 333, 556, 537, 278, 333, 333, 365, 556, 834, 834, 834, 611,
    667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
    556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500,
)
_HELVETICA_BOLD = (0,) * 32 + (
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611,
    975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556,
    333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611,
    611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584, 0,
    556, 0, 278, 556, 500, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
    0, 278, 278, 500, 500, 350, 556, 1000, 333, 1000, 556, 333, 944, 0, 500, 667,
    278, 333, 556, 556, 556, 556, 280, 556, 333, 737, 370, 556, 584, 333, 737, 333,
    400, 584, 333, 333, 333, 611, 556, 278, 333, 333, 365, 556, 834, 834, 834, 611,
    722, 722, 722, 722, 722, 722, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
    556, 556, 556, 556, 556, 556, 889, 556, 556, 556, 556, 556, 278, 278, 278, 278,
    611, 611, 611, 611, 611, 611, 611, 584, 611, 611, 611, 611, 611, 556, 611, 556,
)
# fmt: on

# Interleaved 2 of 5: the widths (narrow or wide) of each digit's five elements.
_ITF_PATTERNS = {
    "0": "nnwwn",
    "1": "wnnnw",
    "2": "nwnnw",
    "3": "wwnnn",
    "4": "nnwnw",
    "5": "wnwnn",
    "6": "nwwnn",
    "7": "nnnww",
    "8": "wnnwn",
    "9": "nwnwn",
}
_ITF_START = "nnnn"  # bar, space, bar, space
_ITF_STOP = "wnn"  # bar, space, bar


class PdfDocument:
    """A single-column A4 document, laid out top to bottom, with automatic page breaks."""

    def __init__(
        self, title: str, author: str = "Acme Pay", *, created_at: datetime | None = None
    ) -> None:
        """`created_at` (default: now) is the /CreationDate; naive datetimes are taken as UTC."""
        self._title = title
        self._author = author
        created_at = created_at or datetime.now(UTC)
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
        self._created_at = created_at.astimezone(UTC)
        self._pages: list[list[bytes]] = [[]]
        self._y: float = PAGE_HEIGHT - MARGIN

    def heading(self, text: str) -> None:
        """A title line in Helvetica-Bold 16."""
        self.text(text, size=_HEADING_SIZE, bold=True)

    def text(self, text: str, *, size: int = 10, bold: bool = False) -> None:
        """A paragraph, wrapped to the page width; newlines start new lines."""
        for line in _wrap(text, size, bold, CONTENT_WIDTH):
            self._make_room(size * _LEADING)
            self._show(MARGIN, line, size, bold)
            self._y -= size * _LEADING

    def field(self, label: str, value: str) -> None:
        """A row with a bold label on the left and its value in a column right of it."""
        labels = _wrap(label, _FIELD_SIZE, True, _LABEL_COLUMN - _LABEL_GAP)
        values = _wrap(value, _FIELD_SIZE, False, CONTENT_WIDTH - _LABEL_COLUMN)
        for label_line, value_line in zip_longest(labels, values, fillvalue=b""):
            self._make_room(_FIELD_SIZE * _LEADING)
            self._show(MARGIN, label_line, _FIELD_SIZE, True)
            self._show(MARGIN + _LABEL_COLUMN, value_line, _FIELD_SIZE, False)
            self._y -= _FIELD_SIZE * _LEADING

    def rule(self) -> None:
        """A thin horizontal line across the content width."""
        self._make_room(_RULE_SPACE)
        y = _num(self._y - _RULE_SPACE / 2)
        right = _num(PAGE_WIDTH - MARGIN)
        self._pages[-1].append(b"0.5 w %d %s m %s %s l S" % (MARGIN, y, right, y))
        self._y -= _RULE_SPACE

    def space(self, points: int = 8) -> None:
        """Vertical room; what follows goes to the next page if it no longer fits."""
        self._y -= points

    def barcode_itf(self, digits: str, *, height: int = 50) -> None:
        """An Interleaved 2 of 5 barcode (the boleto's 44 digits) drawn as filled rectangles.

        Narrow elements are one unit wide and wide ones three; the unit is at most one point,
        less when that keeps the barcode within the content width.
        """
        if not digits or len(digits) % 2 or not (digits.isascii() and digits.isdigit()):
            raise ValueError("an ITF barcode needs an even number of digits (0-9)")
        elements = _ITF_START
        for bars, spaces in zip(digits[::2], digits[1::2], strict=True):
            elements += "".join(
                bar + space
                for bar, space in zip(_ITF_PATTERNS[bars], _ITF_PATTERNS[spaces], strict=True)
            )
        elements += _ITF_STOP
        widths = [3 if element == "w" else 1 for element in elements]
        unit = min(_ITF_MAX_UNIT, CONTENT_WIDTH / sum(widths))
        self._make_room(height)
        bottom = _num(self._y - height)
        x: float = MARGIN
        for index, width in enumerate(widths):
            if index % 2 == 0:  # even elements are bars, odd ones spaces
                rect = b"%s %s %s %s re" % (_num(x), bottom, _num(width * unit), _num(height))
                self._pages[-1].append(rect)
            x += width * unit
        self._pages[-1].append(b"f")
        self._y -= height

    def to_bytes(self) -> bytes:
        """The whole document as PDF 1.4 with Flate-compressed content streams."""
        first_page = 6  # after the catalog, the page tree, two fonts and the info
        kids = b" ".join(b"%d 0 R" % (first_page + 2 * i) for i in range(len(self._pages)))
        info = b"<< /Title %s /Author %s /Producer %s /CreationDate (D:%s) >>" % (
            _text_string(self._title),
            _text_string(self._author),
            _text_string(PRODUCER),
            self._created_at.strftime("%Y%m%d%H%M%SZ").encode(),
        )
        objects = [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(self._pages)),
            _font_object(b"Helvetica"),
            _font_object(b"Helvetica-Bold"),
            info,
        ]
        for operations in self._pages:
            stream = zlib.compress(b"\n".join(operations))
            objects.append(
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d]"
                b" /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>"
                % (PAGE_WIDTH, PAGE_HEIGHT, len(objects) + 2)
            )
            objects.append(
                b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream"
                % (len(stream), stream)
            )

        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, body in enumerate(objects, start=1):
            offsets.append(len(out))
            out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
        out += b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
            len(objects) + 1,
            xref,
        )
        return bytes(out)

    def _make_room(self, height: float) -> None:
        """Start a new page unless `height` points still fit above the bottom margin."""
        if self._y - height < MARGIN and self._pages[-1]:
            self._pages.append([])
            self._y = PAGE_HEIGHT - MARGIN

    def _show(self, x: float, line: bytes, size: int, bold: bool) -> None:
        """Draw one encoded line whose top is at the current position."""
        if line:
            font = b"F2" if bold else b"F1"
            self._pages[-1].append(
                b"BT /%s %d Tf %s %s Td (%s) Tj ET"
                % (font, size, _num(x), _num(self._y - size), _escape(line))
            )


def _wrap(text: str, size: int, bold: bool, width: float) -> list[bytes]:
    """Split `text` into cp1252 lines no wider than `width` points, breaking at spaces.

    A word wider than a whole line is cut between characters.
    """
    widths = _HELVETICA_BOLD if bold else _HELVETICA
    limit = width * 1000 / size  # in glyph units

    def measure(data: bytes) -> int:
        return sum(widths[byte] for byte in data)

    lines = []
    for paragraph in text.splitlines() or [""]:
        line = b""
        for word in _encode(paragraph).split(b" "):
            candidate = line + b" " + word if line else word
            if measure(candidate) <= limit:
                line = candidate
                continue
            if line:
                lines.append(line)
            while measure(word) > limit:
                cut = 1
                while measure(word[: cut + 1]) <= limit:
                    cut += 1
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def _encode(text: str) -> bytes:
    """cp1252, the byte encoding of WinAnsiEncoding; anything outside it becomes "?"."""
    return text.encode("cp1252", errors="replace")


def _escape(data: bytes) -> bytes:
    """Escape a PDF literal string's specials (a raw CR would be read as a line feed)."""
    return (
        data.replace(b"\\", b"\\\\")
        .replace(b"(", b"\\(")
        .replace(b")", b"\\)")
        .replace(b"\r", b"\\r")
    )


def _text_string(text: str) -> bytes:
    """A metadata string: literal when ASCII, otherwise UTF-16BE with a byte order mark."""
    if text.isascii():
        return b"(%s)" % _escape(text.encode("ascii"))
    return b"<FEFF%s>" % text.encode("utf-16-be").hex().upper().encode()


def _font_object(name: bytes) -> bytes:
    return b"<< /Type /Font /Subtype /Type1 /BaseFont /%s /Encoding /WinAnsiEncoding >>" % name


def _num(value: float) -> bytes:
    """A PDF number with at most two decimals."""
    return (b"%.2f" % value).rstrip(b"0").rstrip(b".")
