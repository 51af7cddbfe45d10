"""Cross-account isolation, driven by the OpenAPI document: every operation whose path names
an object is called by account A with account B's object and must answer the contract's 404
`not_found` while changing nothing (no row of any table, no queued job).

`TARGETS` (tests/support/isolation.py) says which of B's objects each operation names and the
request that would act on it; an operation in the document without a line there, or a line
for an operation that is gone, fails the first test. B's own call with the same request gets
through, so each 404 is about ownership, never about the object's state or the body. API-key
routes are also scoped by mode: B's live key cannot see B's test objects.
"""

import pytest

from app.models import KeyMode
from tests.support.http import assert_error
from tests.support.isolation import (
    NOT_ACCOUNT_SCOPED,
    OPENAPI,
    TARGETS,
    Credentials,
    Operation,
    Request,
    Victim,
    differences,
    documented_operations,
    send,
    state,
    stranger,
    warm_up,
)

COVERED = sorted(TARGETS)
NAMING_SEVERAL = [target for target in COVERED if target[1].count("{") > 1]


def _ids(target: tuple[str, str]) -> str:
    return " ".join(target)


@pytest.fixture
def victim(app, redis, monkeypatch, tmp_path) -> Victim:
    """Account B; `redis` empties the queues around each test, so they hold only its jobs."""
    return Victim(app, monkeypatch, tmp_path)


@pytest.fixture
def spec(client) -> dict:
    return client.get(OPENAPI).get_json()


def _operation(spec: dict, target: tuple[str, str]) -> Operation:
    found = [op for op in documented_operations(spec) if op.key == target]
    assert found, f"{_ids(target)} is in TARGETS but not in the OpenAPI document"
    return found[0]


def _assert_refused_without_change(
    app, client, spec, operation: Operation, request: Request, caller: Credentials
):
    """`request` is built before this is called, so the objects it names predate the reading."""
    warm_up(client, caller)
    before = state(app)
    response = send(client, operation, request, caller)
    changed = differences(before, state(app))
    assert_error(response, 404, "not_found_error", "not_found")
    assert changed == [], f"{operation} changed {changed}"
    documented = spec["paths"][operation.path][operation.method.lower()]["responses"]
    assert "404" in documented, f"{operation} does not document its 404"


def test_every_operation_naming_an_object_is_in_the_matrix(spec):
    documented = {operation.key for operation in documented_operations(spec)}
    assert documented, "the document lists no operation with a path parameter"
    uncovered = sorted(documented - TARGETS.keys() - NOT_ACCOUNT_SCOPED.keys())
    assert not uncovered, f"operations without an isolation case: {[_ids(t) for t in uncovered]}"
    gone = sorted((TARGETS.keys() | NOT_ACCOUNT_SCOPED.keys()) - documented)
    assert not gone, f"matrix lines for operations no longer documented: {[_ids(t) for t in gone]}"
    assert not TARGETS.keys() & NOT_ACCOUNT_SCOPED.keys()


def test_every_path_parameter_of_a_covered_operation_names_one_of_bs_objects(spec, victim):
    for operation in documented_operations(spec):
        if operation.key in TARGETS:
            values = TARGETS[operation.key](victim).values
            assert set(values) == operation.parameters, operation


@pytest.mark.parametrize("target", COVERED, ids=_ids)
def test_another_account_gets_404_and_changes_nothing(app, client, spec, victim, target):
    operation = _operation(spec, target)
    request = TARGETS[target](victim)
    _assert_refused_without_change(app, client, spec, operation, request, stranger(app))


@pytest.mark.parametrize("target", COVERED, ids=_ids)
def test_the_same_accounts_other_mode_gets_404_and_changes_nothing(
    app, client, spec, victim, target
):
    operation = _operation(spec, target)
    if operation.security != "apikey":
        pytest.skip("dashboard JWT routes serve both modes of the account by design")
    request = TARGETS[target](victim)
    live = victim.credentials(KeyMode.LIVE)
    _assert_refused_without_change(app, client, spec, operation, request, live)


@pytest.mark.parametrize("target", NAMING_SEVERAL, ids=_ids)
def test_a_path_naming_own_objects_and_one_of_bs_gets_404_and_changes_nothing(
    app, client, spec, victim, monkeypatch, tmp_path, target
):
    """Every id is checked against the account, not only the first: A names its own objects
    in every place but one, which names B's."""
    operation = _operation(spec, target)
    own = Victim(app, monkeypatch, tmp_path)  # same storage folder as B's, so both can upload
    mine, theirs = TARGETS[target](own), TARGETS[target](victim)
    for foreign in sorted(operation.parameters):
        request = Request({**mine.values, foreign: theirs.values[foreign]}, mine.json)
        _assert_refused_without_change(app, client, spec, operation, request, own.credentials())


@pytest.mark.parametrize("target", COVERED, ids=_ids)
def test_the_owner_gets_through_with_the_same_request(app, client, spec, victim, target):
    """The control: B's own call acts, so the refusals above are the ownership check."""
    operation = _operation(spec, target)
    request = TARGETS[target](victim)
    owner = victim.credentials()
    warm_up(client, owner)
    before = state(app)
    response = send(client, operation, request, owner)
    changed = differences(before, state(app))
    assert response.status_code < 400, (str(operation), response.get_data(as_text=True))
    if operation.method != "GET":
        assert changed, f"{operation} changed nothing for its owner"
