"""The hand-written PDF writer, read back with pypdf as any PDF reader would."""

import re
from datetime import UTC, datetime
from io import BytesIO
from itertools import pairwise

import pytest
from pypdf import PdfReader

from app.pdf import CONTENT_WIDTH, PdfDocument

CREATED_AT = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
BOLETO_BARCODE = "23797000000001234561234567890123456789012345"
ITF_PATTERNS = {  # the ITF symbology: which of a digit's five elements are wide
    "nnwwn": "0",
    "wnnnw": "1",
    "nwnnw": "2",
    "wwnnn": "3",
    "nnwnw": "4",
    "wnwnn": "5",
    "nwwnn": "6",
    "nnnww": "7",
    "wnnwn": "8",
    "nwnwn": "9",
}


def read(doc: PdfDocument) -> PdfReader:
    return PdfReader(BytesIO(doc.to_bytes()))


def receipt() -> PdfDocument:
    doc = PdfDocument("Recibo de pagamento nº 42", created_at=CREATED_AT)
    doc.heading("Recibo de pagamento")
    doc.text("Cobrança paga — São Paulo, Nº 42")
    doc.rule()
    doc.field("Valor", "R$ 1.234,56")
    doc.field("Pagador", "José Conceição")
    doc.space()
    doc.text("Obrigado!", bold=True)
    return doc


def test_a_receipt_opens_with_its_metadata():
    reader = read(receipt())

    assert len(reader.pages) == 1
    assert reader.metadata.title == "Recibo de pagamento nº 42"
    assert reader.metadata.author == "Acme Pay"
    assert reader.metadata.producer == "Acme Pay"
    assert reader.metadata.creation_date == CREATED_AT


def test_text_comes_back_with_portuguese_characters():
    text = read(receipt()).pages[0].extract_text()

    assert "Recibo de pagamento" in text
    assert "Cobrança paga — São Paulo, Nº 42" in text
    assert "Valor" in text
    assert "R$ 1.234,56" in text
    assert "José Conceição" in text


def test_the_heading_is_bold_and_larger():
    page = read(receipt()).pages[0]

    assert b"/F2 16 Tf" in page.get_contents().get_data()
    assert page["/Resources"]["/Font"]["/F2"]["/BaseFont"] == "/Helvetica-Bold"


def test_pdf_string_specials_are_escaped_and_foreign_characters_replaced():
    doc = PdfDocument("Escapes (and a \\)", created_at=CREATED_AT)
    doc.text(r"Total (com taxas) \ desconto ✓")
    reader = read(doc)

    assert reader.metadata.title == "Escapes (and a \\)"
    assert r"Total (com taxas) \ desconto ?" in reader.pages[0].extract_text()


def test_long_text_wraps_within_the_page_width():
    word = "m" * 9  # Helvetica 10: "m" is 8.33 pt and a space 2.78 pt wide
    paragraph = " ".join([word] * 200)
    doc = PdfDocument("Wrap", created_at=CREATED_AT)
    doc.text(paragraph)

    lines = [line for line in read(doc).pages[0].extract_text().splitlines() if line]
    per_line = int((CONTENT_WIDTH + 2.78) // (9 * 8.33 + 2.78))  # as many words as fit
    assert len(paragraph) == 1999
    assert len(lines) == -(-200 // per_line) > 1
    assert all(line.split() == [word] * per_line for line in lines[:-1])
    assert " ".join(lines) == paragraph


def test_a_word_wider_than_the_page_is_cut():
    doc = PdfDocument("Cut", created_at=CREATED_AT)
    doc.text("x" * 200)

    lines = read(doc).pages[0].extract_text().splitlines()
    assert len(lines) > 1
    assert "".join(lines) == "x" * 200


def test_many_rows_break_onto_more_pages():
    doc = PdfDocument("Extrato", created_at=CREATED_AT)
    for row in range(150):
        doc.field(f"Linha {row}", f"R$ {row},00")
    reader = read(doc)

    assert len(reader.pages) > 1
    assert "Linha 0" in reader.pages[0].extract_text()
    assert "Linha 149" in reader.pages[-1].extract_text()
    assert "Linha 149" not in reader.pages[0].extract_text()


def itf_rectangles(doc: PdfDocument) -> list[tuple[float, float]]:
    """The (x, width) of every `re` in the first page's decoded content stream."""
    content = read(doc).pages[0].get_contents().get_data().decode("latin-1")
    return [
        (float(x), float(width))
        for x, width in re.findall(r"([\d.]+) [\d.]+ ([\d.]+) [\d.]+ re\b", content)
    ]


def decode_itf(rectangles: list[tuple[float, float]]) -> str:
    """Read digits back from bars: a reference ITF decoder for the test."""
    rectangles = sorted(rectangles)
    elements = []
    for (x, width), (next_x, _) in pairwise(rectangles):
        elements += [width, next_x - x - width]
    elements.append(rectangles[-1][1])
    unit = min(elements)
    kinds = "".join("w" if element > 2 * unit else "n" for element in elements)
    assert kinds[:4] == "nnnn" and kinds[-3:] == "wnn"  # start and stop patterns
    digits = ""
    for start in range(4, len(kinds) - 3, 10):
        pair = kinds[start : start + 10]
        digits += ITF_PATTERNS[pair[0::2]] + ITF_PATTERNS[pair[1::2]]
    return digits


def test_barcode_itf_draws_the_boleto_barcode():
    doc = PdfDocument("Boleto", created_at=CREATED_AT)
    doc.barcode_itf(BOLETO_BARCODE)
    rectangles = itf_rectangles(doc)

    assert len(rectangles) == 2 + len(BOLETO_BARCODE) // 2 * 5 + 2  # start, pairs, stop
    assert decode_itf(rectangles) == BOLETO_BARCODE
    right_edge = max(x + width for x, width in rectangles)
    assert min(x for x, _ in rectangles) >= 50 and right_edge <= 50 + CONTENT_WIDTH


def test_a_long_barcode_shrinks_to_fit_the_page():
    digits = "0123456789" * 10
    doc = PdfDocument("Boleto", created_at=CREATED_AT)
    doc.barcode_itf(digits)
    rectangles = itf_rectangles(doc)

    assert decode_itf(rectangles) == digits
    assert max(x + width for x, width in rectangles) <= 50 + CONTENT_WIDTH + 0.01


@pytest.mark.parametrize("digits", ["", "123", "12a4", "12 4", "١٢"])
def test_barcode_itf_refuses_odd_or_non_digit_input(digits):
    with pytest.raises(ValueError):
        PdfDocument("Boleto").barcode_itf(digits)


def test_the_xref_table_points_at_each_object():
    data = receipt().to_bytes()

    assert data.startswith(b"%PDF-1.4\n%")
    assert data.endswith(b"%%EOF\n")
    startxref = int(re.search(rb"startxref\n(\d+)\n%%EOF\n$", data).group(1))
    assert data[startxref:].startswith(b"xref\n0 ")
    count = int(data[startxref:].split(b"\n")[1].split()[1])
    entries = data[startxref:].split(b"\n")[2 : 2 + count]
    assert entries[0] == b"0000000000 65535 f "
    for number, entry in enumerate(entries[1:], start=1):
        offset, generation, kind = entry.split()
        assert len(offset) == 10 and generation == b"00000" and kind == b"n"
        assert data[int(offset) :].startswith(b"%d 0 obj" % number)
    assert re.search(rb"trailer\n<< /Size %d /Root 1 0 R /Info \d+ 0 R >>" % count, data)


def test_output_is_deterministic_for_a_fixed_creation_date():
    assert receipt().to_bytes() == receipt().to_bytes()
