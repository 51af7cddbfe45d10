"""The served OpenAPI document is valid OpenAPI, and every `pattern` in it means the same to a
client that validates with the document as to the service: clients use ECMA-262 (what OpenAPI
and JSON Schema specify), the service Python's `re.fullmatch` (what `Pattern` applies).

The patterns are whatever the document holds when the test runs, so a pattern added to any
schema or parameter is checked without touching this file. ECMA-262's side is Node.js: one
process per test for every pattern and sample. Without Node these tests skip.
"""

import json
import re
import shutil
import subprocess
from collections.abc import Sequence

import marshmallow as ma
import pytest
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator, validate

from app.api.schemas.fields import Pattern
from tests.fuzz.conftest import openapi_document
from tests.support.patterns import texts_matching

SPEC_VALIDATORS = {"3.0": OpenAPIV30SpecValidator, "3.1": OpenAPIV31SpecValidator}
SAMPLES_PER_PATTERN = 30
# Put before, after and inside each valid sample: where Python and ECMA-262 read a construct
# differently (`\d`, `\w`, `\s`, `.`, `$`), one of these lands on the difference.
HOSTILE_CHARACTERS = [
    "\n",
    "\r",
    "\x00",
    "<",
    " ",
    "\t",
    "\x1c",  # whitespace to Python's `\s` only
    "\x85",  # NEL: whitespace to Python's `\s` only
    "\u00a0",
    "\ufeff",  # BOM: whitespace to ECMA-262's `\s` only
    "\u2028",  # a line terminator to ECMA-262's `.` only
    "\u0663",  # ARABIC-INDIC DIGIT THREE: a digit to Python's `\d` only
    "\u00e9",  # é: a word character to Python's `\w` only
    "\u212a",  # KELVIN SIGN: folds to "k" under Unicode case-insensitivity
    "\U0001f600",  # outside the BMP: one character in both, with the "u" flag
    "\udc00",  # a lone surrogate, which JSON can carry
]
# Reads {"patterns": [...], "samples": [[pattern, text], ...]} on stdin; writes
# {"errors": {pattern: message}, "matches": [true | false | null, ...]}.
ECMA_SCRIPT = """
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const compiled = new Map();
const errors = {};
for (const pattern of input.patterns) {
  try {
    compiled.set(pattern, new RegExp(pattern, "u"));
  } catch (error) {
    errors[pattern] = error.message;
  }
}
const matches = input.samples.map(([pattern, text]) =>
  compiled.has(pattern) ? compiled.get(pattern).test(text) : null
);
process.stdout.write(JSON.stringify({ errors, matches }));
"""


@pytest.fixture(scope="module")
def document() -> dict:
    return openapi_document()


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.skip("Node.js is not installed: the ECMA-262 side of the pattern checks runs on it")
    return path


def published_patterns(document: dict) -> dict[str, list[str]]:
    """Each `pattern` in the document, with the JSON pointers of where it appears."""
    found: dict[str, list[str]] = {}

    def walk(node, pointer: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
                if key == "pattern" and isinstance(value, str):
                    found.setdefault(value, []).append(here)
                walk(value, here)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{pointer}/{index}")

    walk(document, "")
    return found


def ecma(node: str, patterns: list[str], samples: Sequence[tuple[str, str]] = ()) -> dict:
    """ECMA-262's reading: why each pattern that does not compile with the "u" flag fails,
    and `RegExp(pattern, "u").test(text)` for each sample (None where it did not compile)."""
    request = {"patterns": patterns, "samples": list(samples)}
    finished = subprocess.run(
        [node, "-e", ECMA_SCRIPT],
        input=json.dumps(request),
        capture_output=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


def samples_for(pattern: str) -> list[str]:
    """Matching texts, and each of them spoiled by a hostile character at its start, its end
    and its middle; the empty text and each character alone."""
    texts = ["", *HOSTILE_CHARACTERS]
    for valid in texts_matching(pattern, SAMPLES_PER_PATTERN):
        middle = len(valid) // 2
        texts.append(valid)
        for character in HOSTILE_CHARACTERS:
            texts += [
                character + valid,
                valid + character,
                valid[:middle] + character + valid[middle:],
            ]
    return list(dict.fromkeys(texts))


def disagreements(node: str, patterns: list[str]) -> dict[str, list[str]]:
    """For each pattern that ECMA-262 and Python read differently, how: the dialect that cannot
    compile it, or the texts that one matches in full and the other does not."""
    found: dict[str, list[str]] = {}
    samples = []
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            found.setdefault(pattern, []).append(f"Python cannot compile it: {error}")
            continue
        samples += [(pattern, text) for text in samples_for(pattern)]
    verdicts = ecma(node, patterns, samples)
    for pattern, message in verdicts["errors"].items():
        found.setdefault(pattern, []).append(f"ECMA-262 cannot compile it: {message}")
    for (pattern, text), ecma_matches in zip(samples, verdicts["matches"], strict=True):
        python_matches = re.fullmatch(pattern, text) is not None
        if ecma_matches is not None and ecma_matches != python_matches:
            found.setdefault(pattern, []).append(
                f"{text!r}: ECMA-262 {ecma_matches}, Python {python_matches}"
            )
    return found


def test_the_document_is_valid_openapi(document):
    version = ".".join(document["openapi"].split(".")[:2])
    assert version in SPEC_VALIDATORS, f"No validator chosen for OpenAPI {document['openapi']}"
    validate(document, cls=SPEC_VALIDATORS[version])


def test_every_pattern_is_anchored_and_compiles_in_ecma_262(document, node):
    patterns = published_patterns(document)
    assert patterns, "the document publishes no pattern; this test would check nothing"
    unanchored = {
        pattern: where
        for pattern, where in patterns.items()
        if not (pattern.startswith("^") and pattern.endswith("$"))
    }
    assert not unanchored, f"Anchor these ^…$: {unanchored}"
    errors = ecma(node, list(patterns))["errors"]
    assert not errors, {
        pattern: (message, patterns[pattern]) for pattern, message in errors.items()
    }


def test_every_pattern_means_the_same_to_clients_and_to_the_service(document, node):
    patterns = published_patterns(document)
    problems = disagreements(node, list(patterns))
    assert not problems, "\n".join(
        f"{pattern!r} at {patterns[pattern]}: {'; '.join(how[:5])}"
        for pattern, how in problems.items()
    )


def test_the_checks_catch_patterns_that_only_python_reads_this_way(node):
    """Each of these would pass review by eye; the checks above must refuse every one."""
    python_only = [
        r"^[A-Za-z0-9_-]{1,64}\Z",  # `\Z` is not ECMA-262
        r"^(?P<id>[a-z]+)$",  # named groups are `(?<id>…)` in ECMA-262
        r"(?i)^[a-z]+$",  # inline flags are not ECMA-262
    ]
    read_differently = [
        r"^[0-9]+|[a-z]+$",  # each anchor binds to one alternative
        r"^\d+$",
        r"^\w+$",
        r"^\s*$",
        r"^.+$",
    ]

    assert set(ecma(node, python_only)["errors"]) == set(python_only)
    assert set(disagreements(node, read_differently)) == set(read_differently)


@pytest.mark.parametrize("pattern", ["[a-z]+", "^[a-z]+", "[a-z]+$", r"^[a-z]+\Z"])
def test_pattern_refuses_an_unanchored_pattern(pattern):
    with pytest.raises(ValueError, match="anchored"):
        Pattern(pattern)


def test_pattern_refuses_a_final_newline():
    """Python's `$` also matches before a final newline; ECMA-262's does not."""
    with pytest.raises(ma.ValidationError):
        Pattern("^[a-z]+$")("abc\n")
