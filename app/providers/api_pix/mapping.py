"""Our records in the words of the Banco Central's API Pix (`bacen/pix-api` 2.9.0), and back.

Pure functions, no I/O: the client moves the JSON, these decide what it means.

A cob's status lands on `TransactionStatus` by `COB_STATUS`: `ATIVA` → WAITING_PAYMENT,
`CONCLUIDA` → PAID, `REMOVIDA_PELO_USUARIO_RECEBEDOR` and `REMOVIDA_PELO_PSP` → CANCELLED.
Only a removal is acted on from the cob (the reconciliation job cancels a pending charge
whose cob the PSP removed); a charge is paid only by the Pix received
(`pix_payments.receive`, which checks amount and payer), and expires by our own clock
(`charge_expiry.expire_due_charges`; the API Pix keeps an expired cob `ATIVA`).
provider-status shows the cob's status as the PSP words it.

A charge with a due date is a `cobv` (`PUT|PATCH|GET /cobv/{txid}`, listed by `GET /cobv`),
whose statuses are the cob's and land the same way. Its txid says so (`txid_for`, `cob_kind`):
a reference is all the provider is handed to ask about or withdraw a charge, and all a PSP's
listing gives, so the kind travels in it rather than in every caller's arguments.

Refund statuses land on `RefundStatus`: `EM_PROCESSAMENTO` → IN_PROGRESS, `DEVOLVIDO` →
REFUNDED, `NAO_REALIZADO` → FAILED. A devolução whose `natureza` is in `MED_NATUREZAS` was
forced by the MED (fraud, an operational failure, or a Pix Automático dispute), not asked for
by the merchant.

A tolerant reader: the standard makes a new enum value a compatible change, so a value we do
not know (a devolução's `status` or `natureza`) never makes a Pix unreadable. It is kept raw
(`Devolucao.status`, `.natureza`), listed in `PixEntry.unknown_values` for the caller to log
once and surface, and what it would decide is left undecided (`Devolucao.state` is None); the
Pix itself and every other devolução are read as usual. A devolução too broken to read at all
is listed in `PixEntry.unreadable` and skipped, for the same reason.

The payer's document is not in the standard's Pix object; many PSPs add it in an object of
their own (`pagador`, Efí's `gnExtras.pagador`) with `cpf` or `cnpj` and `nome`. Which one, if
any, is a setting (`payer_document_path`): without it no payer document is read at all.
"""

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from app.formats.locations import ACTIVE, COMPLETED, REMOVED_BY_PSP
from app.models import RefundStatus, TransactionStatus
from app.pix import due
from app.pix.brcode import format_amount
from app.pix.documents import strip_formatting, tax_id_kind
from app.pix.identifiers import END_TO_END_PATTERN

log = logging.getLogger(__name__)

COB, COBV = "cob", "cobv"  # an immediate charge, one with a due date: the API's path
COB_KINDS = (COB, COBV)
# Ends a cobv's txid: a uuid's hex digits have no `v`, so a txid alone says its kind.
COBV_TXID_SUFFIX = "v"
REMOVED_BY_RECEIVER = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
COB_STATUS = {
    ACTIVE: TransactionStatus.WAITING_PAYMENT,
    COMPLETED: TransactionStatus.PAID,
    REMOVED_BY_RECEIVER: TransactionStatus.CANCELLED,
    REMOVED_BY_PSP: TransactionStatus.CANCELLED,
}
REMOVED_STATUSES = frozenset(
    status for status, ours in COB_STATUS.items() if ours is TransactionStatus.CANCELLED
)
REFUND_STATUS = {
    "EM_PROCESSAMENTO": RefundStatus.IN_PROGRESS,
    "DEVOLVIDO": RefundStatus.REFUNDED,
    "NAO_REALIZADO": RefundStatus.FAILED,
}
MED_NATUREZAS = frozenset({"MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO"})
NATUREZAS = MED_NATUREZAS | {"ORIGINAL", "RETIRADA"}
DEVOLUCAO_ID_PATTERN = re.compile(r"[a-zA-Z0-9]{1,35}")
# A received Pix's txid: 1-35 letters and digits (2.9.0 widened it; ours have 32).
RECEIVED_TXID_PATTERN = re.compile(r"[a-zA-Z0-9]{1,35}")
# What the `*_document_path` setting may name: dotted JSON member names.
PAYER_PATH_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
NO_PAYER_DOCUMENT = "none"
MAX_SOLICITACAO_PAGADOR = 140
# ASCII digits only: `\d` would also take Arabic-Indic and other Unicode digits.
VALOR_PATTERN = re.compile(r"[0-9]{1,10}\.[0-9]{2}")
# `CobVValor`'s modalidades for our terms' types (`app.pix.due`): juros and descontos in
# calendar days, as ours count; a dated discount's tiers share one modalidade.
FIXED_OR_PERCENT_MODALIDADE = {"fixed": 1, "percent": 2}
JUROS_MODALIDADE = {"fixed_day": 1, "percent_day": 2, "percent_month": 3, "percent_year": 4}
DAILY_DESCONTO_MODALIDADE = {"fixed_day": 3, "percent_day": 5}


@dataclass(frozen=True)
class Devolucao:
    """A refund of a received Pix, as the PSP reports it."""

    id: str
    rtr_id: str | None
    amount: int
    natureza: str | None
    status: str
    requested_at: datetime | None
    settled_at: datetime | None
    reason: str | None

    @property
    def is_med(self) -> bool:
        return self.natureza in MED_NATUREZAS

    @property
    def state(self) -> RefundStatus | None:
        """Our status for the reported one; None for a value this release does not know."""
        return REFUND_STATUS.get(self.status)


@dataclass(frozen=True)
class UnknownValue:
    """An enum value outside the release we implement, where it was met."""

    field: str
    value: str
    where: str


@dataclass(frozen=True)
class PixEntry:
    """A received Pix from a webhook or `GET /pix`. `payer_document` and `payer_name` come
    from the PSP's payer extension the setting names (the standard only has the free-text
    `infoPagador`); None when the PSP does not send it. `raw` is the object as reported."""

    end_to_end_id: str
    txid: str | None
    amount: int
    received_at: datetime
    key: str | None
    payer_message: str | None
    payer_document: str | None
    payer_name: str | None
    devolucoes: tuple[Devolucao, ...]
    unknown_values: tuple[UnknownValue, ...] = ()
    unreadable: tuple[str, ...] = ()
    raw: Mapping = field(default_factory=dict, compare=False, repr=False)


def txid_for(transaction_id: str, kind: str = COB) -> str:
    """The txid of a transaction's cob: its uuid's 32 hex digits, so a retry after a timeout
    binds the same txid and the PSP answers with the charge it already holds; a cobv's ends
    in COBV_TXID_SUFFIX (33 characters, within the standard's 26-35)."""
    if kind not in COB_KINDS:
        raise ValueError(f"not a kind of charge: {kind!r}")
    try:
        hex_digits = uuid.UUID(transaction_id).hex
    except ValueError as error:
        raise ValueError(f"not a transaction id (a uuid): {transaction_id!r}") from error
    return hex_digits + COBV_TXID_SUFFIX if kind == COBV else hex_digits


def cob_kind(txid: str) -> str:
    """Whether the charge `txid` names is a cob or a cobv (see `txid_for`)."""
    return COBV if txid.endswith(COBV_TXID_SUFFIX) else COB


def transaction_id_of(txid: str) -> str | None:
    """The transaction `txid_for` made this txid for; None for a txid it never makes."""
    try:
        return str(uuid.UUID(hex=txid.removesuffix(COBV_TXID_SUFFIX)))
    except ValueError:
        return None


def devolucao_id_for(refund_id: str) -> str:
    """The devolução id of one of our refunds: the same retry-safe rule as `txid_for`."""
    return txid_for(refund_id)


def refund_reference(end_to_end_id: str, refund_id: str) -> str:
    """What a refund job polls: the Pix's end-to-end id and the refund's devolução id side by
    side (32 + 32 characters, no separator needed)."""
    return end_to_end_id + devolucao_id_for(refund_id)


def split_refund_reference(reference: str) -> tuple[str, str]:
    """`refund_reference` back into its end-to-end id and devolução id; anything else is a
    bug on our side, as an id outside the standard's charset is for the client."""
    end_to_end = END_TO_END_PATTERN.match(reference)
    if end_to_end is None:
        raise ValueError(f"not an API Pix refund reference: {reference!r}")
    return end_to_end.group(), reference[end_to_end.end() :]


def valor(amount_minor: int) -> str:
    """`1234` → `"12.34"`, the API's `\\d{1,10}\\.\\d{2}`; zero, negative or too large →
    ValueError."""
    return format_amount(amount_minor)


def amount_from_valor(text: object) -> int:
    """`"12.34"` → `1234`, strictly: no sign, comma, exponent, spaces or missing decimals."""
    if not isinstance(text, str) or not VALOR_PATTERN.fullmatch(text):
        raise ValueError(f"valor must look like 12.34 (up to 10 digits, 2 decimals): {text!r}")
    return int(text.replace(".", ""))


def cob_body(
    amount_minor: int,
    expires_in: int,
    payer_name: str | None,
    payer_document: str | None,
    *,
    receiver_key: str,
    description: str | None = None,
    terms: due.DueTerms | None = None,
) -> dict:
    """The body of `PUT /cob/{txid}`, or with `terms` of `PUT /cobv/{txid}` (which has no
    `expiracao`: it is payable until `validadeAposVencimento` days after the due date).
    `devedor` needs both a name and a CPF or CNPJ, so a cob sends it only when both are given;
    a cobv requires it. A document that is neither is a ValueError. The charge's description
    becomes `solicitacaoPagador`, the text the payer's bank app shows."""
    if terms is not None:
        calendario: dict = {
            "dataDeVencimento": terms.date.isoformat(),
            "validadeAposVencimento": terms.days_valid_after,
        }
    elif expires_in > 0:
        calendario = {"expiracao": expires_in}
    else:
        raise ValueError("calendario.expiracao must be a positive number of seconds")
    body = {
        "calendario": calendario,
        "valor": {"original": valor(amount_minor), **cobv_valor(terms)},
        "chave": receiver_key,
    }
    if payer_name and payer_document:
        document = strip_formatting(payer_document.strip()).upper()
        kind = tax_id_kind(document)
        if kind is None:
            raise ValueError("the payer document is neither a valid CPF nor a valid CNPJ")
        body["devedor"] = {kind.lower(): document, "nome": payer_name}
    elif terms is not None:
        raise ValueError("a charge with a due date needs the payer's name and CPF or CNPJ")
    request_to_payer = solicitacao_pagador(description)
    if request_to_payer:
        body["solicitacaoPagador"] = request_to_payer
    return body


def cobv_valor(terms: due.DueTerms | None) -> dict:
    """`multa`, `juros`, `desconto` and `abatimento` of `CobVValor` for the terms ({} for
    none). Dated tiers share one modalidade, as the standard and `due.problems` have it."""
    if terms is None:
        return {}
    parts = {}
    if terms.fine:
        parts["multa"] = _modalidade(FIXED_OR_PERCENT_MODALIDADE, terms.fine)
    if terms.interest:
        parts["juros"] = _modalidade(JUROS_MODALIDADE, terms.interest)
    if isinstance(terms.discounts, due.DailyDiscount):
        parts["desconto"] = _modalidade(DAILY_DESCONTO_MODALIDADE, terms.discounts)
    elif terms.discounts:
        parts["desconto"] = {
            "modalidade": FIXED_OR_PERCENT_MODALIDADE[terms.discounts[0].type],
            "descontoDataFixa": [
                {"data": discount.until.isoformat(), "valorPerc": _valor_perc(discount)}
                for discount in terms.discounts
            ],
        }
    if terms.rebate:
        parts["abatimento"] = _modalidade(FIXED_OR_PERCENT_MODALIDADE, terms.rebate)
    return parts


def _modalidade(
    modalidades: dict[str, int], term: due.FixedOrPercent | due.Interest | due.DailyDiscount
) -> dict:
    return {"modalidade": modalidades[term.type], "valorPerc": _valor_perc(term)}


def _valor_perc(
    term: due.FixedOrPercent | due.Interest | due.DatedDiscount | due.DailyDiscount,
) -> str:
    """Reais for a fixed value (ours are centavos), else the percentage with 2 places."""
    if due.is_fixed(term.type):
        return valor(term.value)
    return f"{Decimal(term.value):.2f}"


def solicitacao_pagador(description: str | None) -> str | None:
    """The description within the standard's 140 characters, cut at the last word that
    fits (mid-word only when one word alone is longer), so the payer never reads half a
    word."""
    text = " ".join((description or "").split())
    if len(text) <= MAX_SOLICITACAO_PAGADOR:
        return text or None
    cut = text[: MAX_SOLICITACAO_PAGADOR + 1].rsplit(" ", 1)[0]
    return cut if len(cut) <= MAX_SOLICITACAO_PAGADOR else text[:MAX_SOLICITACAO_PAGADOR]


def payer_document_path(setting: str | None) -> tuple[str, ...] | None:
    """The `API_PIX_PAYER_DOCUMENT_PATH` setting as member names (`gnExtras.pagador` →
    `("gnExtras", "pagador")`), None for `none` or empty: the PSP reports no payer document.
    Anything else is a ValueError naming the rule."""
    text = (setting or "").strip()
    if text.lower() in ("", NO_PAYER_DOCUMENT):
        return None
    if not PAYER_PATH_PATTERN.fullmatch(text):
        raise ValueError(
            f"API_PIX_PAYER_DOCUMENT_PATH must be {NO_PAYER_DOCUMENT!r} or a dotted path to the "
            f"object holding cpf or cnpj, such as pagador or gnExtras.pagador: {setting!r}"
        )
    return tuple(text.split("."))


def parse_webhook(body: object, payer_path: tuple[str, ...] | None = None) -> list[PixEntry]:
    """The Pix in a webhook call `{"pix": [...]}` (several per call are allowed). A body of
    any other shape, or with no readable Pix, is a ValueError saying what is wrong; one
    unreadable Pix among readable ones is logged as an error and skipped, so the others are
    applied and the PSP stops re-delivering a call that would fail for ever (reconciliation
    reads that Pix again from `GET /pix`)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("pix"), list):
        raise ValueError('the webhook body must be an object with a "pix" list')
    if not body["pix"]:
        raise ValueError('the webhook "pix" list is empty')
    entries, problems = [], []
    for index, item in enumerate(body["pix"]):
        try:
            entries.append(_parse_pix(item, f"pix[{index}]", payer_path))
        except ValueError as problem:
            problems.append(str(problem))
    if not entries:
        raise ValueError("; ".join(problems))
    for problem in problems:
        log.error("unreadable Pix in a webhook call skipped", extra={"problem": problem})
    return entries


def parse_pix(item: object, payer_path: tuple[str, ...] | None = None) -> PixEntry:
    """One Pix from `GET /pix/{e2eid}` or a page of `GET /pix`."""
    return _parse_pix(item, "pix", payer_path)


def _parse_pix(item: object, where: str, payer_path: tuple[str, ...] | None) -> PixEntry:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be an object")
    end_to_end_id = _required_text(item, "endToEndId", where)
    if not END_TO_END_PATTERN.fullmatch(end_to_end_id):
        raise ValueError(f"{where}.endToEndId is not an end-to-end id: {end_to_end_id!r}")
    txid = _optional_text(item, "txid", where)
    if txid is not None and not RECEIVED_TXID_PATTERN.fullmatch(txid):
        raise ValueError(f"{where}.txid is not a txid: {txid!r}")
    payer = _payer(item, where, payer_path)
    devolucoes, unknown, unreadable = _devolucoes(item.get("devolucoes"), f"{where}.devolucoes")
    return PixEntry(
        end_to_end_id=end_to_end_id,
        txid=txid,
        amount=_positive_amount(item.get("valor"), f"{where}.valor"),
        received_at=_timestamp(item.get("horario"), f"{where}.horario"),
        key=_optional_text(item, "chave", where),
        payer_message=_optional_text(item, "infoPagador", where),
        payer_document=_optional_text(payer, "cpf", f"{where}.pagador")
        or _optional_text(payer, "cnpj", f"{where}.pagador"),
        payer_name=_optional_text(payer, "nome", f"{where}.pagador"),
        devolucoes=devolucoes,
        unknown_values=unknown,
        unreadable=unreadable,
        raw=item,
    )


def _payer(item: Mapping, where: str, path: tuple[str, ...] | None) -> Mapping:
    """The PSP's payer object at `path`, {} when the setting names none or it is absent."""
    payer: object = item
    for name in path or ():
        payer = payer.get(name) if isinstance(payer, Mapping) else None
    if path is None or payer is None:
        return {}
    if not isinstance(payer, Mapping):
        raise ValueError(f"{where}.{'.'.join(path)} must be an object")
    return payer


def _devolucoes(
    raw: object, where: str
) -> tuple[tuple[Devolucao, ...], tuple[UnknownValue, ...], tuple[str, ...]]:
    """A list, a single object (one published example sends that) or nothing; each read on
    its own, so one broken or from a newer release never hides the Pix or the others."""
    if raw is None:
        return (), (), ()
    items = [raw] if isinstance(raw, Mapping) else raw
    if not isinstance(items, list):
        return (), (), (f"{where} must be a list or an object",)
    devolucoes, unreadable = [], []
    for index, entry in enumerate(items):
        try:
            devolucoes.append(parse_devolucao(entry, f"{where}[{index}]"))
        except ValueError as problem:
            unreadable.append(str(problem))
    unknown = tuple(
        unknown
        for index, devolucao in enumerate(devolucoes)
        for unknown in unknown_values_of(devolucao, f"{where}[{index}]")
    )
    return tuple(devolucoes), unknown, tuple(unreadable)


def unknown_values_of(devolucao: Devolucao, where: str = "devolucao") -> tuple[UnknownValue, ...]:
    """The devolução's enum values this release does not know."""
    unknown = []
    if devolucao.state is None:
        unknown.append(UnknownValue("devolucao.status", devolucao.status, where))
    if devolucao.natureza is not None and devolucao.natureza not in NATUREZAS:
        unknown.append(UnknownValue("devolucao.natureza", devolucao.natureza, where))
    return tuple(unknown)


def parse_devolucao(entry: object, where: str = "devolucao") -> Devolucao:
    """One devolução, from a Pix's `devolucoes` or `GET|PUT /pix/{e2eid}/devolucao/{id}`;
    its status and natureza are kept as reported, known or not (`Devolucao.state`)."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be an object")
    times = entry.get("horario") or {}
    if not isinstance(times, Mapping):
        raise ValueError(f"{where}.horario must be an object")
    return Devolucao(
        id=_required_text(entry, "id", where),
        rtr_id=_optional_text(entry, "rtrId", where),
        amount=_positive_amount(entry.get("valor"), f"{where}.valor"),
        natureza=_optional_text(entry, "natureza", where),
        status=_required_text(entry, "status", where),
        requested_at=_optional_timestamp(times.get("solicitacao"), f"{where}.horario.solicitacao"),
        settled_at=_optional_timestamp(times.get("liquidacao"), f"{where}.horario.liquidacao"),
        reason=_optional_text(entry, "motivo", where),
    )


def _positive_amount(raw: object, where: str) -> int:
    try:
        amount = amount_from_valor(raw)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from error
    if amount == 0:
        raise ValueError(f"{where} must be more than zero")
    return amount


def _required_text(item: Mapping, name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}.{name} is required (a non-empty string)")
    return value


def _optional_text(item: Mapping, name: str, where: str) -> str | None:
    value = item.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}.{name} must be a string")
    return value or None


def _timestamp(raw: object, where: str) -> datetime:
    """RFC 3339 with an offset (`Z` or `±hh:mm`), in UTC."""
    if not isinstance(raw, str):
        raise ValueError(f"{where} is required (an RFC 3339 timestamp)")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as error:
        raise ValueError(f"{where} is not an RFC 3339 timestamp: {raw!r}") from error
    if moment.tzinfo is None:
        raise ValueError(f"{where} has no time zone offset: {raw!r}")
    return moment.astimezone(UTC)


def _optional_timestamp(raw: object, where: str) -> datetime | None:
    return None if raw is None else _timestamp(raw, where)
