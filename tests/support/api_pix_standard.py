"""The Banco Central's API Pix (`bacen/pix-api` 2.9.0, vendored in `bacen_api_pix/`) as a
checker: the fake PSP runs every request it receives and every answer it gives through it,
so neither the fake nor our adapter can drift from the standard unnoticed.

Schemas are checked with jsonschema through `openapi-schema-validator` (OpenAPI 3.0's
`nullable`, `readOnly` and formats); operations are looked up here. The published document
has bugs; each is corrected at load time by a named `Erratum` that must find exactly the
places it expects, so vendoring a new release forces a look at every one.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from jsonschema import validators
from openapi_schema_validator import (
    OAS30ReadValidator,
    OAS30WriteValidator,
    oas30_format_checker,
)
from referencing import Registry
from referencing.jsonschema import DRAFT4

SPEC_PATH = Path(__file__).with_name("bacen_api_pix") / "openapi-2.9.0.yaml"
SPEC_URI = "urn:bacen:pix-api:2.9.0"
JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
# Answers any endpoint may give besides its own: the description's "Gerais" errors (400,
# 403, 404, 410, 500, 503, 504) and the OAuth2 layer's 401 for a bad token (RFC 6750).
GENERAL_ERROR_STATUSES = frozenset({400, 401, 403, 404, 410, 500, 503, 504})
WEBHOOK_CALLBACK = ("/webhook/{chave}", "put", "listaPix", "{$request.body#/webhookUrl}/pix")


@dataclass(frozen=True)
class AllowedAdapterViolation:
    """A request violation of our adapter (app/) tolerated until app/ is fixed: remove the
    entry with the fix. It matches one operation and a fragment of the message."""

    name: str
    method: str
    path_template: str
    message_fragment: str
    why: str


# Known request violations of our adapter; each says whether it is deliberate or a bug of
# app/providers/api_pix to remove with its fix.
ALLOWED_ADAPTER_VIOLATIONS = (
    AllowedAdapterViolation(
        "DELIBERATE_BAD_VALOR",
        "PUT",
        "/cob/{txid}",
        "valor.original: '12.3' does not match",
        "deliberate: test_a_bad_valor_is_refused_with_a_400_problem hands ApiPixClient a bad "
        "valor to see the PSP's 400 come back as ApiPixRefused",
    ),
)


@dataclass(frozen=True)
class Erratum:
    """A bug of the published document, corrected at load time. `fix` changes the document
    and returns how many places it changed, which must be `occurrences`."""

    name: str
    why: str
    occurrences: int
    fix: Callable[[dict], int]


def _replace_all(node: object, key: str, old: object, new: object) -> int:
    """Set `key` to `new` wherever it holds `old`, in every object of the tree."""
    if isinstance(node, list):
        return sum(_replace_all(item, key, old, new) for item in node)
    if not isinstance(node, dict):
        return 0
    count = sum(_replace_all(value, key, old, new) for value in node.values())
    if node.get(key) == old:
        node[key] = new
        count += 1
    return count


def _anchor_patterns(node: object) -> int:
    """`^(?:p)$` for every unanchored schema `pattern` outside examples."""
    if isinstance(node, list):
        return sum(_anchor_patterns(item) for item in node)
    if not isinstance(node, dict):
        return 0
    count = sum(
        _anchor_patterns(value)
        for name, value in node.items()
        if name not in ("example", "examples")
    )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and not pattern.startswith("^"):
        node["pattern"] = f"^(?:{pattern})$"
        count += 1
    return count


def _pix_txid_any_length(document: dict) -> int:
    txid = document["components"]["schemas"]["Pix"]["properties"]["txid"]
    if txid != {"allOf": [{"$ref": "#/components/schemas/TxId"}, {"pattern": "[a-zA-Z0-9]{1,35}"}]}:
        return 0
    txid.clear()
    txid.update({"type": "string", "pattern": "[a-zA-Z0-9]{1,35}"})
    return 1


def _pix_list_requires_pix(document: dict) -> int:
    listed = document["components"]["schemas"]["PixConsultados"]
    return _replace_all(listed, "required", ["parametros", "cobs"], ["parametros", "pix"])


def _dated_discounts_required(node: object) -> int:
    """Require `descontoDataFixa` in the dated alternative of every `desconto` oneOf."""
    if isinstance(node, list):
        return sum(_dated_discounts_required(item) for item in node)
    if not isinstance(node, dict):
        return 0
    count = sum(_dated_discounts_required(value) for value in node.values())
    dated = (node.get("oneOf") or [{}])[0]
    if "descontoDataFixa" in dated.get("properties", {}) and "required" not in dated:
        dated["required"] = ["descontoDataFixa"]
        count += 1
    return count


def _recebedor_address_inside(document: dict) -> int:
    receiver = document["components"]["schemas"]["DadosRecebedor"]
    if receiver.get("required") != ["logradouro", "cidade", "uf", "cep"]:
        return 0
    del receiver["required"]
    return 1


ERRATA = (
    Erratum(
        "CPF_PATTERN",
        "the CPF is written as a JavaScript regex literal, `/^\\d{11}$/`, whose slashes no "
        "CPF contains: as published no CPF is valid anywhere",
        12,
        lambda document: _replace_all(document, "pattern", "/^\\d{11}$/", "^\\d{11}$"),
    ),
    Erratum(
        "PIX_TXID_LENGTH",
        "a received Pix's txid is 1-35 characters (a static QR code's is at most 25), but "
        "the schema also ANDs in the cob's 26-35 `TxId`",
        1,
        _pix_txid_any_length,
    ),
    Erratum(
        "PIX_LIST_REQUIRED",
        "`PixConsultados` requires `cobs`, copied from `CobsConsultadas`; its list is `pix`",
        1,
        _pix_list_requires_pix,
    ),
    Erratum(
        "COB_LIST_IDCOB",
        "the `GET /cob` and `GET /cobv` items require `idCob`, a field defined nowhere",
        2,
        lambda document: _replace_all(
            document, "required", ["status", "txid", "idCob"], ["status", "txid"]
        ),
    ),
    Erratum(
        "COBV_DAILY_DISCOUNT",
        "`CobVValor.desconto` is oneOf dated tiers or a `valorPerc`, but the tiers' branch "
        "requires nothing, so every daily discount (modalidade 3 to 6, a `valorPerc` and no "
        "`descontoDataFixa`) matches both branches and is refused",
        1,
        _dated_discounts_required,
    ),
    Erratum(
        "RECEBEDOR_ADDRESS",
        "`DadosRecebedor` requires logradouro, cidade, uf and cep beside `recebedor` instead "
        "of inside it (where it requires them too): as published no cobv answer is valid, "
        "the document's own example neither",
        1,
        _recebedor_address_inside,
    ),
    Erratum(
        "WHOLE_VALUE_PATTERNS",
        "patterns are written as whole-value formats (`\\d{1,10}\\.\\d{2}`) but a JSON "
        "Schema pattern only has to match somewhere: `12.345` would pass as a valor",
        51,
        _anchor_patterns,
    ),
)


@cache
def document() -> dict:
    """The vendored document with `ERRATA` applied (once per process)."""
    with SPEC_PATH.open(encoding="utf-8") as source:
        loaded = yaml.load(source, Loader=yaml.CSafeLoader)
    for erratum in ERRATA:
        found = erratum.fix(loaded)
        assert found == erratum.occurrences, (
            f"erratum {erratum.name} found {found} places, expected {erratum.occurrences}: "
            "re-check it against the vendored release"
        )
    return loaded


@cache
def _registry() -> Registry:
    return Registry().with_resource(SPEC_URI, DRAFT4.create_resource(document()))


@cache
def _validator_class(base: type, future_enum_values: frozenset[str]) -> type:
    """`base` accepting, in an enum position only, the values of a newer release that a
    test registered: the standard makes new enum values a compatible change."""

    standard_enum = base.VALIDATORS["enum"]

    def enum(validator, enums, instance, schema):
        if isinstance(instance, str) and instance in future_enum_values:
            return
        yield from standard_enum(validator, enums, instance, schema)

    return validators.extend(base, {"enum": enum})


def schema_violations(
    schema: dict,
    instance: object,
    *,
    writing: bool = False,
    future_enum_values: Iterable[str] = (),
) -> list[str]:
    """What `instance` breaks in `schema` (a fragment of the document, its `$ref`s resolved
    there), `where: message` each; `writing` is a request's direction (readOnly refused)."""
    base = OAS30WriteValidator if writing else OAS30ReadValidator
    validator = _validator_class(base, frozenset(future_enum_values))(
        schema,
        _resolver=_registry().resolver(base_uri=SPEC_URI),
        format_checker=oas30_format_checker,
    )
    found = []
    for error in validator.iter_errors(instance):
        where = ".".join(str(part) for part in error.absolute_path) or "(body)"
        message = f"{where}: {_short(error.message)}"
        if message not in found:
            found.append(message)
    return found


def component(name: str) -> dict:
    """`#/components/schemas/<name>` as a schema to check against."""
    return {"$ref": f"#/components/schemas/{name}"}


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    path_pattern: re.Pattern
    spec: dict
    parameters: tuple[dict, ...]

    def responses(self) -> dict[int, dict]:
        return {int(status): _resolved(answer) for status, answer in self.spec["responses"].items()}


@cache
def operations() -> tuple[Operation, ...]:
    """Every operation of the API's server, templated paths after literal ones (as OpenAPI
    matches them). Those with servers of their own, the payer's QR code locations
    (`GET /cobv/{pixUrlAccessToken}` would otherwise shadow `GET /cobv/{txid}`), are not
    served there."""
    found = []
    for template, item in document()["paths"].items():
        shared = [_resolved(parameter) for parameter in item.get("parameters", [])]
        for method, spec in item.items():
            if method not in ("get", "put", "post", "patch", "delete") or "servers" in spec:
                continue
            own = [_resolved(parameter) for parameter in spec.get("parameters", [])]
            keys = {(parameter["name"], parameter["in"]) for parameter in own}
            parameters = own + [p for p in shared if (p["name"], p["in"]) not in keys]
            regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
            found.append(
                Operation(method.upper(), template, re.compile(regex), spec, tuple(parameters))
            )
    return tuple(sorted(found, key=lambda op: (op.template.count("{"), -len(op.template))))


def find_operation(method: str, path: str) -> tuple[Operation, dict] | None:
    """The operation answering `method path` (path decoded) and its path parameters."""
    for operation in operations():
        match = operation.path_pattern.fullmatch(path)
        if operation.method == method and match:
            return operation, match.groupdict()
    return None


def request_violations(
    method: str,
    path: str,
    query: Mapping[str, list[str]],
    body: object,
    content_type: str | None,
) -> list[str]:
    """What a request breaks: its operation, path and query parameters, and JSON body.
    `body` is the parsed JSON (None when there was none), `query` every value per name."""
    found = find_operation(method, path)
    if found is None:
        return [f"no operation {method} {path} in the standard"]
    operation, path_values = found
    violations = []
    declared = set()
    for parameter in operation.parameters:
        name, place = parameter["name"], parameter["in"]
        if place == "path":
            values = [path_values[name]]
        elif place == "query":
            declared.add(name)
            values = list(query.get(name, []))
        else:
            continue
        if not values:
            if parameter.get("required"):
                violations.append(f"{place} parameter {name}: required")
            continue
        if len(values) > 1:
            violations.append(f"{place} parameter {name}: given {len(values)} times")
        value, problem = _typed(values[0], parameter["schema"])
        if problem:
            violations.append(f"{place} parameter {name}: {problem}")
            continue
        violations += [
            f"{place} parameter {name}: {message.removeprefix('(body): ')}"
            for message in schema_violations(parameter["schema"], value, writing=True)
        ]
    violations += [
        f"query parameter {name}: not declared" for name in query if name not in declared
    ]
    request_body = _resolved(operation.spec.get("requestBody") or {})
    if not request_body:
        if body is not None:
            violations.append("body: the operation takes none")
        return violations
    if body is None:
        if request_body.get("required"):
            violations.append("body: required")
        return violations
    media = request_body["content"].get(_media_type(content_type))
    if media is None:
        return [*violations, f"body: content type {content_type!r} not accepted"]
    return violations + schema_violations(media["schema"], body, writing=True)


def response_violations(
    method: str,
    path: str,
    status: int,
    body: object,
    content_type: str | None,
    future_enum_values: Iterable[str] = (),
    tolerated_statuses: Iterable[int] = (),
) -> list[str]:
    """What an answer breaks: a status the operation (or every endpoint) may give, its
    content type, and its body (the parsed JSON; None for an empty body). A
    `tolerated_statuses` answer (a test's deliberate off-standard PSP) must be a problem."""
    found = find_operation(method, path)
    if found is None:
        return [f"no operation {method} {path} in the standard"]
    responses = found[0].responses()
    declared = responses.get(status)
    if declared is None:
        if status not in GENERAL_ERROR_STATUSES and status not in tolerated_statuses:
            return [f"status {status}: not an answer of {method} {found[0].template}"]
        declared = {"content": {PROBLEM_JSON: {"schema": component("Problema")}}}
    content = declared.get("content") or {}
    if not content:
        return [] if body is None else [f"status {status}: declared without a body"]
    media = content.get(_media_type(content_type))
    if media is None:
        return [f"status {status}: content type {content_type!r}, declared {sorted(content)}"]
    if body is None:
        return [f"status {status}: no JSON body"]
    return schema_violations(media["schema"], body, future_enum_values=future_enum_values)


def webhook_violations(body: object, future_enum_values: Iterable[str] = ()) -> list[str]:
    """What a `POST {webhookUrl}/pix` call the PSP makes breaks (the `listaPix` callback)."""
    template, method, name, expression = WEBHOOK_CALLBACK
    callback = document()["paths"][template][method]["callbacks"][name][expression]["post"]
    schema = _resolved(callback["requestBody"])["content"][JSON]["schema"]
    return schema_violations(schema, body, future_enum_values=future_enum_values)


def token_request_violations(form: Mapping[str, str]) -> list[str]:
    """The OAuth2 client-credentials request (the document's `OAuth2` security scheme)."""
    flow = document()["components"]["securitySchemes"]["OAuth2"]["flows"]["clientCredentials"]
    violations = []
    if form.get("grant_type") != "client_credentials":
        violations.append(f"grant_type: {form.get('grant_type')!r}, not client_credentials")
    unknown = set(form.get("scope", "").split()) - set(flow["scopes"])
    violations += [f"scope {scope}: not in the standard" for scope in sorted(unknown)]
    return violations


def allowed_adapter_violation(
    method: str, path: str, message: str
) -> AllowedAdapterViolation | None:
    """The allow-list entry covering this request violation, or None."""
    found = find_operation(method, path)
    template = found[0].template if found else None
    for allowed in ALLOWED_ADAPTER_VIOLATIONS:
        if (allowed.method, allowed.path_template) == (method, template) and (
            allowed.message_fragment in message
        ):
            return allowed
    return None


def _typed(raw: str, schema: dict) -> tuple[object, str | None]:
    """A query or path value as its schema's type, or the reason it is not one."""
    kind = _schema_type(schema)
    if kind == "integer":
        return (int(raw), None) if re.fullmatch(r"-?[0-9]+", raw) else (raw, "not an integer")
    if kind == "boolean":
        if raw in ("true", "false"):
            return raw == "true", None
        return raw, "not true or false"
    return raw, None


def _schema_type(schema: dict) -> str | None:
    schema = _resolved(schema)
    if "type" in schema:
        return schema["type"]
    return next((kind for part in schema.get("allOf", []) if (kind := _schema_type(part))), None)


def _resolved(node: dict) -> dict:
    """`node`, following `$ref`s inside the document."""
    while "$ref" in node:
        target = document()
        for segment in node["$ref"].removeprefix("#/").split("/"):
            target = target[segment.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
