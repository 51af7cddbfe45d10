"""A merchant's payout request: its destination checked for its type (Pix key, Brazilian bank
account, BEP-20 address), the contract's caps and the balance checked, then a PENDING payout;
and withdrawing the request while it is still PENDING.

A request is never debited while PENDING, and a cancelled one never touches the wallet: the
debit is the approval's (`decisions`), which a flagged account's request gets at once.
"""

import re
from dataclasses import dataclass, field

from app.errors import Conflict, InvalidRequest, NotFound
from app.extensions import db
from app.formats.money import Amount
from app.marks import Sentences, translatable
from app.models import Account, KeyMode, Membership, Payout, PayoutStatus, PayoutType
from app.pix import keys
from app.pix.documents import strip_formatting, tax_id_kind
from app.providers import payout_provider_for
from app.services import accounts, fees, locking
from app.services.allowances import Allowance, manager_allowance, refused
from app.services.payouts import decisions
from app.services.payouts.funding import BRL, check_caps, check_covered
from app.services.payouts.lifecycle import lock, record_audit, record_events, transition

W = PayoutStatus
ROLE_REQUIRED = "WITHDRAWAL_ROLE_REQUIRED"
CRYPTO_NETWORK = "BSC"
CRYPTO_CURRENCY = "USDT"
BEP20_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
BANK_CODE = re.compile(r"[0-9]{3}")
AGENCY = re.compile(r"[0-9]{1,5}(-[0-9Xx])?")
BANK_ACCOUNT_NUMBER = re.compile(r"[0-9]{1,12}-?[0-9Xx]")
MAX_DESCRIPTION = 500
DESTINATION_FIELDS = {
    "PIX": {"pixKey", "pixKeyType"},
    "TED": {"bankAccount"},
    "CRYPTO": {"cryptoAddress", "cryptoNetwork", "cryptoCurrency"},
}


@dataclass(frozen=True)
class NewPayout:
    type: str
    amount: int
    currency: str
    pix_key: str | None = None
    pix_key_type: str | None = None
    bank_account: dict | None = None
    crypto_address: str | None = None
    crypto_network: str | None = None
    crypto_currency: str | None = None
    description: str | None = None
    test: bool = False
    strict_cnpj: bool = True
    destination_fields: set[str] = field(default_factory=set)


def request_payout(membership: Membership, new: NewPayout) -> Payout:
    """Create a PENDING payout after every check that can be made before any debit.

    Accounts flagged `withdrawals_auto_approve` have BRL payouts approved at once up to their
    threshold. The account row is locked first, so concurrent requests cannot together pass
    the daily cap.
    """
    accounts.require_manager(
        membership, "Only the account's OWNER or ADMIN may request payouts.", ROLE_REQUIRED
    )
    account = locking.lock(Account, membership.account_id)
    mode = KeyMode.TEST if new.test else KeyMode.LIVE
    destination = _destination(new, account)
    provider = payout_provider_for(mode)
    cost = fees.payout_cost(new.type, new.amount)
    fee = cost.fee
    if new.amount <= fee:
        raise InvalidRequest(
            translatable("The amount must be more than the payout fee (%(fee)s)."),
            values={"fee": Amount(fee, new.currency)},
            code="invalid_amount",
            param="amount",
        )
    if new.currency == BRL:
        check_caps(account, mode, new.amount)
    check_covered(account.id, mode, new.currency, cost.debit, locked=False)
    payout = Payout(
        account_id=account.id,
        mode=mode,
        status=W.PENDING,
        type=PayoutType(new.type),
        amount=new.amount,
        fee=fee,
        currency=new.currency,
        description=new.description,
        requested_by_user_id=membership.user_id,
        provider=provider.name,
        **destination,
    )
    db.session.add(payout)
    db.session.flush()
    record_events(payout, None)
    if decisions.auto_approves(account, payout):
        decisions.approve_pending(payout, actor_user_id=None, refusal=InvalidRequest)
    return payout


def cancel(membership: Membership, payout_id: str) -> Payout:
    """The merchant withdraws a request, only while PENDING (nothing was debited)."""
    payout = lock(payout_id)
    if payout.account_id != membership.account_id:
        raise NotFound(translatable("No such withdrawal."))
    cancellability(payout, membership).require()
    transition(payout, W.CANCELLED)
    record_audit(payout, membership.user_id, "payout.cancelled")
    return payout


def cancellability(payout: Payout, membership: Membership) -> Allowance:
    """May this member withdraw the request? An OWNER or ADMIN, while it is PENDING: once
    approved, its money is debited and on its way."""
    role = manager_allowance(
        membership,
        translatable("Only the account's OWNER or ADMIN may cancel payouts."),
        ROLE_REQUIRED,
    )
    if payout.status is W.PENDING:
        return role
    not_pending = Conflict(
        translatable("Only a PENDING withdrawal can be cancelled; this one is %(status)s."),
        values={"status": payout.status},
        code="withdrawal_not_cancellable",
    )
    return role & refused(not_pending)


def _destination(new: NewPayout, account: Account) -> dict:
    """The destination columns for the payout's type, checked before anything is created."""
    extras = sorted(new.destination_fields - DESTINATION_FIELDS[new.type])
    if extras:
        raise InvalidRequest(f"{extras[0]} does not apply to {new.type} payouts.", param=extras[0])
    if new.type == "CRYPTO":
        return _crypto_destination(new)
    if new.currency != BRL:
        raise InvalidRequest(f"{new.type} payouts are in BRL.", param="currency")
    if new.type == "PIX":
        return _pix_destination(new, account)
    return {"bank_account": _bank_account(new.bank_account)}


def _pix_destination(new: NewPayout, account: Account) -> dict:
    if not new.pix_key:
        raise InvalidRequest("pixKey is required for PIX payouts.", param="pixKey")
    if not new.pix_key_type:
        raise InvalidRequest("pixKeyType is required for PIX payouts.", param="pixKeyType")
    checked = keys.validate(
        new.pix_key,
        new.pix_key_type,
        strict_cnpj=new.strict_cnpj,
        cnpj_checksum_waiver=account.cnpj_checksum_waiver,
    )
    if not checked.valid:
        raise InvalidRequest(
            translatable("Invalid Pix key: %(problems)s"),
            values={"problems": Sentences(checked.errors)},
            code="invalid_pix_key",
            param="pixKey",
        )
    return {"pix_key": checked.normalised, "pix_key_type": str(checked.type)}


def _bank_account(account: dict | None) -> dict:
    if not account:
        raise InvalidRequest("bankAccount is required for TED payouts.", param="bankAccount")
    rules = {
        "bankCode": (BANK_CODE, "the bank's 3-digit COMPE code"),
        "agency": (AGENCY, "the branch number (up to 5 digits, optional check digit)"),
        "account": (BANK_ACCOUNT_NUMBER, "the account number with its check digit"),
    }
    for name, (pattern, what) in rules.items():
        if not pattern.fullmatch(str(account.get(name) or "")):
            raise InvalidRequest(f"bankAccount.{name} must be {what}.", param=f"bankAccount.{name}")
    holder = (account.get("holderName") or "").strip()
    if not holder:
        raise InvalidRequest("bankAccount.holderName is required.", param="bankAccount.holderName")
    document = strip_formatting(account.get("holderDocument") or "")
    if tax_id_kind(document) is None:
        raise InvalidRequest(
            "bankAccount.holderDocument must be a valid CPF or CNPJ.",
            param="bankAccount.holderDocument",
        )
    return {
        "bankCode": account["bankCode"],
        "agency": account["agency"],
        "account": account["account"],
        "holderName": holder,
        "holderDocument": document,
    }


def _crypto_destination(new: NewPayout) -> dict:
    if new.crypto_network != CRYPTO_NETWORK:
        raise InvalidRequest("Crypto payouts go over BSC only.", param="cryptoNetwork")
    if new.crypto_currency != CRYPTO_CURRENCY:
        raise InvalidRequest("Crypto payouts are in USDT only.", param="cryptoCurrency")
    if new.currency != CRYPTO_CURRENCY:
        raise InvalidRequest("Crypto payouts are in USDT.", param="currency")
    if not BEP20_ADDRESS.fullmatch(new.crypto_address or ""):
        raise InvalidRequest(
            "cryptoAddress must be a BEP-20 address: 0x and 40 hexadecimal characters.",
            param="cryptoAddress",
        )
    return {
        "crypto_address": new.crypto_address,
        "crypto_network": CRYPTO_NETWORK,
        "crypto_currency": CRYPTO_CURRENCY,
    }
