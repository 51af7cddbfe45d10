"""The live Pix provider: our charges and refunds as one PSP's API Pix calls.

It receives Pix (immediate charges, `cob`, and charges with a due date, `cobv`, through the
same calls: `mapping.cob_kind` reads which from the txid) and sends them back (devoluções);
it sends no Pix-outs, so payouts and cashout refunds are refused before they reach it
(`app.providers.payout_provider_for`). Every id it hands the PSP is derived from ours
(`txid_for`, `devolucao_id_for`), so a retry after an outcome-unknown failure asks for the
same thing again; when the PSP refuses the repeated request, the record it already holds is
read back and used if it is the one we asked for.
"""

import logging
import uuid
from datetime import UTC, datetime, timedelta

from app.models import RefundStatus, RefundStrategy
from app.models.base import utcnow
from app.pix import due
from app.providers.api_pix.client import ApiPixClient
from app.providers.api_pix.mapping import (
    COB,
    COBV,
    REMOVED_BY_RECEIVER,
    REMOVED_STATUSES,
    Devolucao,
    cob_body,
    cob_kind,
    devolucao_id_for,
    parse_devolucao,
    refund_reference,
    split_refund_reference,
    txid_for,
    valor,
)
from app.providers.api_pix.problems import ApiPixRefused, ApiPixUnavailable
from app.providers.base import (
    PaymentInstructions,
    PaymentProvider,
    PaymentRequest,
    PaymentStatusRequest,
    PayoutRequest,
    PayoutSent,
    PixCharge,
    PixChargeRequest,
    PixReturn,
    ProviderError,
    ProviderRefused,
    ProviderStatus,
    RefundRequest,
    RefundState,
    RefundStatusRequest,
)

log = logging.getLogger(__name__)

PIX, BRL = "PIX", "BRL"
ORIGINAL = "ORIGINAL"


class ApiPixProvider(PaymentProvider):
    name = "api_pix"
    refundable_methods = frozenset({PIX})

    def __init__(self, client: ApiPixClient, payer_path: tuple[str, ...] | None = None):
        self.client = client
        # The standard's Pix has no payer document; only a PSP extension the settings name
        # (`mapping.payer_document_path`) lets a payer lock be checked.
        self.reports_payer_document = payer_path is not None

    def supports(self, method: str, currency: str, amount: int) -> bool:
        return method == PIX and currency == BRL and amount > 0

    def create_payment(self, request: PaymentRequest) -> PaymentInstructions:
        raise _not_offered(request.method)

    def payment_status(self, request: PaymentStatusRequest) -> ProviderStatus:
        """The cob as the PSP holds it now (provider-status shows it whole)."""
        if request.method != PIX:
            raise _not_offered(request.method)
        cob = self._get_cob(request.provider_reference)
        return ProviderStatus(status=str(cob.get("status")), raw=cob)

    def cancel_payment(self, method: str, provider_reference: str) -> None:
        """Remove the cob; one already removed counts as done, one paid is a refusal."""
        if method != PIX:
            raise _not_offered(method)
        try:
            self.client.patch_cob(
                provider_reference, {"status": REMOVED_BY_RECEIVER}, cob_kind(provider_reference)
            )
        except ApiPixRefused as refusal:
            if self._get_cob(provider_reference).get("status") not in REMOVED_STATUSES:
                raise refusal

    def create_charge(self, request: PixChargeRequest) -> PixCharge:
        """A cob, or a cobv when the request has a due date."""
        txid = txid_for(request.reference, COB if request.due is None else COBV)
        try:
            body = cob_body(
                request.amount,
                request.expires_in,
                request.payer_name,
                request.payer_document,
                receiver_key=self.client.settings.receiver_pix_key,
                description=request.description,
                terms=request.due,
            )
        except ValueError as error:
            raise ProviderRefused(f"API Pix: {error}.", code="invalid_cob") from error
        cob = self._put_cob(txid, body)
        return PixCharge(
            txid=txid,
            br_code=cob["pixCopiaECola"],
            # Our public QR address (`/v1/pix/locations/<id>/qr.png`): random like the
            # sandbox's, since a PSP's `loc.id` is often a guessable sequence number.
            location_id=uuid.uuid4().hex,
            expires_at=_expires_at(cob, request),
        )

    def _put_cob(self, txid: str, body: dict) -> dict:
        """One immediate retry with the same txid when the answer was lost: giving up would
        leave the merchant a 503 and the PSP an orphan cob whose code nobody holds."""
        try:
            cob = self._put_or_read_back(txid, body)
        except ApiPixUnavailable:
            cob = self._put_or_read_back(txid, body)
        if not cob.get("pixCopiaECola"):
            raise ProviderError("API Pix: the cob came without pixCopiaECola.", "bad_answer")
        return cob

    def _put_or_read_back(self, txid: str, body: dict) -> dict:
        try:
            return self.client.put_cob(txid, body, cob_kind(txid))
        except ApiPixRefused as refusal:
            return self._held_cob(txid, body, refusal)

    def _held_cob(self, txid: str, body: dict, refusal: ApiPixRefused) -> dict:
        """The cob `txid` when the PSP already holds the one we asked for (a repeated PUT
        some PSPs refuse); otherwise the refusal stands."""
        try:
            cob = self._get_cob(txid)
        except ApiPixRefused:
            raise refusal from None
        same = (cob.get("valor") or {}).get("original") == body["valor"]["original"]
        if not same or cob.get("chave") != body["chave"] or cob.get("status") in REMOVED_STATUSES:
            raise refusal
        return cob

    def _get_cob(self, txid: str) -> dict:
        return self.client.get_cob(txid, cob_kind(txid))

    def return_pix(self, end_to_end_id: str, amount: int, refund_id: str) -> PixReturn:
        """An automatic return (a payment we will not credit), as a devolução of all of it."""
        devolucao = self._devolve(end_to_end_id, devolucao_id_for(refund_id), amount)
        return PixReturn(return_id=devolucao.rtr_id, status=_refund_state(devolucao).value)

    def refund(self, request: RefundRequest) -> str:
        """A devolução of `request.amount`; the reference to poll is `refund_reference`."""
        devolution = request.strategy == RefundStrategy.DEVOLUTION
        if request.method != PIX or not devolution or not request.end_to_end_id:
            raise ProviderRefused(
                "API Pix refunds a Pix only by devolução of its end-to-end id.",
                code="unsupported_refund",
            )
        self._devolve(request.end_to_end_id, devolucao_id_for(request.reference), request.amount)
        return refund_reference(request.end_to_end_id, request.reference)

    def _devolve(self, end_to_end_id: str, devolucao_id: str, amount: int) -> Devolucao:
        body = {"valor": valor(amount), "natureza": ORIGINAL}
        try:
            answer = self.client.put_devolucao(end_to_end_id, devolucao_id, body)
        except ApiPixRefused as refusal:
            answer = self._held_devolucao(end_to_end_id, devolucao_id, body, refusal)
        return _parsed_devolucao(answer)

    def _held_devolucao(
        self, end_to_end_id: str, devolucao_id: str, body: dict, refusal: ApiPixRefused
    ) -> dict:
        """The devolução already asked for under this id (a retry the PSP refused)."""
        try:
            held = self.client.get_devolucao(end_to_end_id, devolucao_id)
        except ApiPixRefused:
            raise refusal from None
        if held.get("valor") != body["valor"]:
            raise refusal
        return held

    def refund_status(self, request: RefundStatusRequest) -> RefundState:
        end_to_end_id, devolucao_id = split_refund_reference(request.provider_reference)
        devolucao = _parsed_devolucao(self.client.get_devolucao(end_to_end_id, devolucao_id))
        state = _refund_state(devolucao)
        if state is not RefundStatus.FAILED:
            return RefundState(status=state.value)
        reason = devolucao.reason or "The payer's bank did not accept the devolução."
        return RefundState(status=state.value, failure_reason=f"API Pix: {reason}")

    def payout(self, request: PayoutRequest) -> PayoutSent:
        raise ProviderRefused(
            "API Pix sends no Pix-outs; live payouts are not offered.", code="unsupported"
        )


def _refund_state(devolucao: Devolucao) -> RefundStatus:
    """Our status for the devolução; one this release does not know is still in progress
    (polled again, nothing decided on a guess) and logged."""
    if devolucao.state is None:
        log.warning(
            "the PSP reported a devolução status this release does not know; still polled",
            extra={"devolucao_id": devolucao.id, "status": devolucao.status},
        )
        return RefundStatus.IN_PROGRESS
    return devolucao.state


def _parsed_devolucao(answer: dict) -> Devolucao:
    try:
        return parse_devolucao(answer)
    except ValueError as error:
        raise ProviderError(f"API Pix: unusable devolução ({error}).", "bad_answer") from error


def _expires_at(cob: dict, request: PixChargeRequest) -> datetime:
    """A cob's `calendario.criacao` + `expiracao`, the PSP's own clock, or now + `expires_in`
    when the answer lacks them; a cobv has no `expiracao`: the end of its last payable day."""
    if request.due is not None:
        return due.payable_until(request.due).astimezone(UTC)
    calendario = cob.get("calendario") or {}
    try:
        created = datetime.fromisoformat(calendario["criacao"]).astimezone(UTC)
        return created + timedelta(seconds=int(calendario["expiracao"]))
    except (KeyError, TypeError, ValueError):
        return utcnow() + timedelta(seconds=request.expires_in)


def _not_offered(method: str) -> ProviderRefused:
    return ProviderRefused(f"API Pix offers only Pix, not {method}.", code="unsupported")
