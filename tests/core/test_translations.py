"""The catalogs behind the pages' words: every string the code marks has a Portuguese
translation for Brazil and for Portugal, with the same placeholders, and the compiled .mo
files the app reads say what their .po files say (`make translations` keeps them so)."""

import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.checkers import python_format
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
TRANSLATIONS = ROOT / "app" / "translations"
TRANSLATED = ("pt_BR", "pt_PT")
# The marks besides `_`/`gettext` that `make translations` extracts.
KEYWORDS = ("-k", "_l", "-k", "translatable")


def _catalog(locale: str):
    with (TRANSLATIONS / locale / "LC_MESSAGES" / "messages.po").open("rb") as po:
        return read_po(po, locale=locale)


def _key(text):
    """A plural message's forms (a list) as a tuple, so it can be compared and hashed."""
    return tuple(text) if isinstance(text, list | tuple) else text


@pytest.fixture(scope="module")
def marked(tmp_path_factory) -> set:
    """What the sources mark for translation now, extracted as `make translations` does."""
    template = tmp_path_factory.mktemp("pot") / "messages.pot"
    extract = [sys.executable, "-m", "babel.messages.frontend", "-q", "extract", "-F"]
    subprocess.run(
        [*extract, "babel.cfg", *KEYWORDS, "--no-location", "-o", str(template), "."],
        cwd=ROOT,
        check=True,
    )
    with template.open("rb") as pot:
        return {message.id for message in read_po(pot) if message.id}


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_marked_string_is_translated(marked, locale):
    catalog = _catalog(locale)
    translated = {m.id for m in catalog if m.id and m.string and "fuzzy" not in m.flags}
    assert not sorted(marked - translated, key=str), "run `make translations` and translate"


@pytest.mark.parametrize("locale", TRANSLATED)
def test_translations_keep_their_placeholders(locale):
    catalog = _catalog(locale)
    for message in catalog:
        if message.id and message.string:
            python_format(catalog, message)  # raises TranslationError on a mismatch


@pytest.mark.parametrize("locale", TRANSLATED)
def test_the_compiled_catalog_is_the_translated_one(locale):
    with (TRANSLATIONS / locale / "LC_MESSAGES" / "messages.mo").open("rb") as mo:
        compiled = {_key(m.id): _key(m.string) for m in read_mo(mo) if m.id}
    written = {_key(m.id): _key(m.string) for m in _catalog(locale) if m.id and m.string}
    assert compiled == written, "run `make translations` to compile the .po files"
