"""Hostile requests to the signed evidence addresses, `PUT` and `GET /storage/<key>`
(app.storage.routes).

They are not in the OpenAPI document: no client reaches them except through an address the
API handed out, so schemathesis never calls them. Here hypothesis starts from real signed
addresses (made by the storage the API uses) and spoils them: the signature, expiry, type and
length parameters, the key (traversal, encoded slashes, NUL), GET for PUT, the headers, and
the body (wrong length or content, chunked, a server that terminates the input).

Whatever is sent: never a 5xx; every 4xx is the API's error envelope; a refused request
leaves the storage directory as it was; an accepted upload stored exactly the signed number
of bytes at the signed key.

Left out: requests no storage route serves. A path with an empty segment (`//`) is redirected
by Werkzeug, another method is its 405, and those answers and any refusal raised before
routing (a NUL in the query) are the site's HTML error page, like any path outside `/v1`.
"""

import io
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import ERROR_TYPES, REQUEST_ID_HEADER
from app.storage import ALLOWED_TYPES, evidence_storage
from app.storage.local import ROUTE_PREFIX

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
CONTENT_TYPE = "image/png"
HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        [
            *("", " ", "\x00", "\n", "\u0663", "\u00e9", "\ufeff", "null", "../", "a" * 2000),
            *("-1", "0", "1_0", "+1", "1e3", "0x1f", "9" * 40, "%00", "%ZZ"),
        ]
    ),
    st.text(max_size=80),
)
# What an HTTP server can hand over as a header value: Latin-1, no control characters but tab.
HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=80,
) | st.just("\t")
HOSTILE_KEYS = [
    "{key}/",
    "{key}%00",
    "%00{key}",
    "{key}%00.png",
    "../{key}",
    "{key}/..",
    "evidence/../{key}",
    "%2e%2e/{key}",
    "..%2f{key}",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "{encoded_slashes}",
    "{parent}/.{name}.type",  # the object's content-type sidecar
    "{parent}/.upload-x",
    "{parent}\\{name}",
    "{parent}%5c{name}",
    "{parent}\uff0f{name}",  # FULLWIDTH SOLIDUS
    "{key}\u00e9",
    "{key_upper}",
    "x" * 600,
]
ADDED_QUERIES = ["", "&", "&signature=", "&expires=1", "&%ZZ", "&expires=%00", "&type=a%00b"]
FUZZ_SETTINGS = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    # One storage directory for all examples: each uses a key of its own.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@dataclass
class Sent:
    """A request as the server receives it."""

    method: str
    target: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    environ: dict[str, object] = field(default_factory=dict)

    def to(self, client):
        return client.open(
            self.target,
            method=self.method,
            input_stream=io.BytesIO(self.body),
            headers=self.headers,
            environ_overrides=self.environ,
        )


@pytest.fixture
def root(storage_root) -> Path:
    return storage_root


@pytest.fixture
def storage(app, root):
    with app.app_context():
        return evidence_storage()


def new_key() -> str:
    return f"evidence/med_fuzz/medev_{uuid.uuid4().hex}"


def files_under(root: Path) -> set[str]:
    """Every file in the storage directory, hidden ones (sidecars, partial uploads) too."""
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


def spoiled_value(name: str, value: str) -> st.SearchStrategy[str | None]:
    """Something else than the signed parameter, or None to leave it out."""
    options = [st.none(), HOSTILE_TEXT]
    if name == "signature":
        options += [
            st.integers(0, len(value) - 1).map(
                lambda at: value[:at] + ("0" if value[at] != "0" else "1") + value[at + 1 :]
            ),
            st.text("0123456789abcdef", min_size=len(value), max_size=len(value)),
            st.sampled_from([value.upper(), value + "0", value[:-1], f" {value}"]),
        ]
    elif name in ("expires", "length"):
        options += [
            st.integers(-(2**70), 2**70).map(str),
            st.sampled_from([str(int(value) + 1), str(int(value) - 1), f" {value}", f"+{value}"]),
        ]
    elif name == "type":
        options += [
            st.sampled_from(sorted(ALLOWED_TYPES)),
            st.sampled_from([value.upper(), f"{value}; charset=utf-8", f"{value}\x00"]),
        ]
    return st.one_of(options)


def hostile_keys(key: str) -> st.SearchStrategy[str]:
    """The key as it appears in the path, spoiled; some spellings decode to the key itself."""
    parent, name = key.rsplit("/", 1)
    spellings = {
        "key": key,
        "parent": parent,
        "name": name,
        "key_upper": key.upper(),
        "encoded_slashes": quote(key, safe=""),
    }
    return st.one_of(
        st.sampled_from(HOSTILE_KEYS).map(lambda template: template.format(**spellings)),
        st.text(min_size=1, max_size=60)
        .map(lambda text: quote(text, safe="/"))
        .filter(lambda path: not path.startswith("/") and "//" not in path),
    )


@st.composite
def spoiled_targets(draw, address: str, key: str) -> str:
    """The signed address's path and query with some of their parts spoiled (maybe none):
    the key, each parameter, their order, and parameters added."""
    query = dict(parse_qsl(urlsplit(address).query))
    spoiled = draw(st.sets(st.sampled_from(["key", "order", "added", *query])))
    path_key = draw(hostile_keys(key)) if "key" in spoiled else key
    names = draw(st.permutations(sorted(query))) if "order" in spoiled else list(query)
    pairs = [
        (name, value)
        for name in names
        if (value := draw(spoiled_value(name, query[name])) if name in spoiled else query[name])
        is not None
    ]
    added = ""
    if "added" in spoiled:
        pairs += draw(st.lists(st.tuples(st.sampled_from(sorted(query)), HOSTILE_TEXT), max_size=2))
        added = draw(st.sampled_from(ADDED_QUERIES))
    return f"{ROUTE_PREFIX}{path_key}?{urlencode(pairs)}{added}"


@st.composite
def spoiled_uploads(draw, ticket) -> Sent:
    """The signed PUT, to its own address, with one or two of the rest spoiled (or none): the
    body (still declared as the signed length, as a client cut off or lying would), the
    Content-Type, the declared length, how the body is framed, the request id."""
    spoiled = draw(
        st.sets(st.sampled_from(["body", "type", "length", "framing", "request_id"]), max_size=2)
    )
    body = PNG
    if "body" in spoiled:
        body = draw(
            st.one_of(
                st.integers(0, len(PNG) - 1).map(lambda end: PNG[:end]),
                st.binary(min_size=1, max_size=64).map(lambda extra: PNG + extra),
                st.just(b"%PDF-" + PNG[5:]),
                st.binary(max_size=2 * len(PNG)),
            )
        )
    headers = dict(ticket.headers)
    if "type" in spoiled:
        headers["Content-Type"] = draw(st.sampled_from(sorted(ALLOWED_TYPES)) | HEADER_TEXT)
    if "request_id" in spoiled:
        headers[REQUEST_ID_HEADER] = draw(HEADER_TEXT)
    declared = str(len(PNG))
    if "length" in spoiled:
        declared = draw(
            st.one_of(
                st.just(str(len(body))),
                st.integers(-1, 2**64).map(str),
                st.sampled_from(["", "abc", f" {len(PNG)}", f"+{len(PNG)}", "0x108", "1e3"]),
            )
        )
    environ = {"CONTENT_LENGTH": declared}
    if "framing" in spoiled:
        environ = draw(
            st.sampled_from(
                [
                    {"CONTENT_LENGTH": declared, "wsgi.input_terminated": True},  # as gunicorn
                    # Werkzeug ignores any Content-Length of a chunked body, as HTTP/1.1 says.
                    {"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True},
                ]
            )
        )
    address = urlsplit(ticket.url)
    return Sent("PUT", f"{address.path}?{address.query}", body, headers, environ)


def assert_error_envelope(response) -> None:
    body = response.get_json(silent=True)
    assert isinstance(body, dict) and set(body) == {"error", "request_id"}, response.data[:300]
    error = body["error"]
    assert error["type"] in ERROR_TYPES, error
    assert isinstance(error["code"], str) and error["code"], error
    assert isinstance(error["message"], str) and error["message"], error
    assert body["request_id"] == response.headers[REQUEST_ID_HEADER], body


def assert_refused(response, root: Path, before: set[str]) -> None:
    """A 4xx in the error envelope, and the storage directory as it was."""
    assert 400 <= response.status_code < 500, response.data[:300]
    assert_error_envelope(response)
    assert files_under(root) == before


def assert_upload_outcome(
    response, sent: Sent, storage, key: str, root: Path, before: set[str]
) -> None:
    """Accepted: the signed number of bytes stored at the signed key, as the signed type, and
    nothing else. Otherwise refused with nothing stored."""
    if response.status_code >= 300:
        assert_refused(response, root, before)
        return
    parent, name = key.rsplit("/", 1)
    assert files_under(root) - before == {key, f"{parent}/.{name}.type"}
    stored = (root / key).read_bytes()
    assert len(stored) == len(PNG) and stored == sent.body[: len(PNG)]
    assert storage.content_type(key) == CONTENT_TYPE


@FUZZ_SETTINGS
@given(data=st.data())
def test_a_spoiled_upload_address_is_refused_cleanly(client, storage, root, data):
    key = new_key()
    ticket = storage.upload_address(key, CONTENT_TYPE, len(PNG))
    method = data.draw(st.sampled_from(["PUT", "PUT", "PUT", "GET"]))  # GET: viewing with it
    sent = Sent(method, data.draw(spoiled_targets(ticket.url, key)), PNG, dict(ticket.headers))
    before = files_under(root)

    response = sent.to(client)

    assert_upload_outcome(response, sent, storage, key, root, before)


@FUZZ_SETTINGS
@given(data=st.data())
def test_a_spoiled_upload_is_refused_cleanly(client, storage, root, data):
    key = new_key()
    sent = data.draw(spoiled_uploads(storage.upload_address(key, CONTENT_TYPE, len(PNG))))
    before = files_under(root)

    response = sent.to(client)

    assert_upload_outcome(response, sent, storage, key, root, before)


@FUZZ_SETTINGS
@given(data=st.data())
def test_a_spoiled_view_address_serves_nothing_but_the_object(client, storage, root, data):
    key = new_key()
    storage.save(key, CONTENT_TYPE, [PNG])
    target = data.draw(spoiled_targets(storage.view_address(key), key))
    headers = {
        name: data.draw(HEADER_TEXT)
        for name in data.draw(
            st.sets(st.sampled_from([REQUEST_ID_HEADER, "Range", "If-None-Match", "Accept"]))
        )
    }
    before = files_under(root)

    response = Sent("GET", target, headers=headers).to(client)

    if response.status_code >= 300:
        assert_refused(response, root, before)
    else:
        assert response.data == PNG
        assert files_under(root) == before


def test_a_signature_in_another_script_is_refused_not_a_crash(client, storage, root):
    """Found by the fuzzing above: `hmac.compare_digest` raised on a non-ASCII str (a 500)."""
    key = new_key()
    ticket = storage.upload_address(key, CONTENT_TYPE, len(PNG))
    address = urlsplit(ticket.url)
    query = dict(parse_qsl(address.query)) | {"signature": "\u0663" * 64}
    sent = Sent("PUT", f"{address.path}?{urlencode(query)}", PNG, dict(ticket.headers))

    response = sent.to(client)

    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "invalid_signature"
    assert files_under(root) == set()
