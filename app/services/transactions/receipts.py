"""PDF documents about a transaction: the payment receipt a merchant downloads, and the
boleto slip a payer prints. Built with `app.pdf`, from the same records the API reads.

A receipt exists only for money that was received (`paid_at` set): a PAID or APPROVED
transaction, and one later refunded or disputed, whose receipt shows what happened since.
It names the payer but never prints the payer's full document (masked as on bank receipts).
The boleto prints it in full, as FEBRABAN's "Pagador" block does: it names whom the bank bills.

Both are read away from any browser, so they are written in the account's language and time
(`app.i18n.written_for`): a Brazilian account's documents are in pt_BR and São Paulo time.
"""

import sqlalchemy as sa
from flask_babel import gettext as _

from app.errors import Conflict
from app.extensions import db
from app.formats.labels import TRANSACTION_STATUS_LABELS
from app.formats.payments import METHOD_LABELS, transaction_id
from app.i18n import written_for
from app.methods import boleto
from app.models import Account, KeyMode, Refund, RefundStatus, Transaction
from app.pdf import PdfDocument
from app.pix import documents
from app.services.transactions import payments
from app.templating import local_datetime, money

PDF = "application/pdf"


def receipt(account_id: str, mode: KeyMode, payment_id: str) -> bytes:
    """The receipt of a settled transaction; 409 `transaction_not_settled` otherwise."""
    payment = payments.get_payment(account_id, mode, payment_id)
    if payment.paid_at is None:
        raise Conflict(
            f"A receipt exists once a transaction is paid; this one is {payment.status}.",
            code="transaction_not_settled",
        )
    account = db.session.get(Account, payment.account_id)
    with written_for(account):
        return _receipt(account, payment)


def _receipt(account: Account, payment: Transaction) -> bytes:
    document = PdfDocument(_("Receipt %(id)s", id=transaction_id(payment)))
    document.heading(_("Payment receipt"))
    document.text(account.name, bold=True)
    if payment.mode is KeyMode.TEST:
        document.text(_("Test mode: no real money moved."))
    document.rule()
    document.field(_("Transaction"), transaction_id(payment))
    document.field(_("Amount"), money(payment.amount, payment.currency))
    method = METHOD_LABELS.get(payment.paid_with, payment.paid_with or "")
    document.field(_("Paid with"), str(method))
    document.field(_("Paid at"), local_datetime(payment.paid_at))
    document.field(_("Status"), str(TRANSACTION_STATUS_LABELS[payment.status]))
    if payment.end_to_end_id:
        document.field(_("Pix end-to-end id"), payment.end_to_end_id)
    if payment.customer_name:
        document.field(_("Payer"), payment.customer_name)
    if payment.customer_document:
        document.field(_("Payer document"), _masked(payment.customer_document))
    if description := payment.metadata_.get("description"):
        document.field(_("Description"), str(description))
    _refunds(document, payment)
    document.rule()
    document.text(_("Issued by Acme Pay on behalf of %(account)s.", account=account.name), size=8)
    return document.to_bytes()


def boleto_slip(payment: Transaction) -> bytes:
    """The printable boleto: digitable line, barcode, amount, due date, beneficiary, payer."""
    account = db.session.get(Account, payment.account_id)
    with written_for(account):
        return _boleto_slip(account, payment)


def _boleto_slip(account: Account, payment: Transaction) -> bytes:
    document = PdfDocument(f"Boleto {payment.id}")
    document.heading("Boleto bancário")  # the document's name in every language
    if payment.mode is KeyMode.TEST:
        document.text(_("Sandbox boleto: valid check digits, but no bank will collect it."))
    document.rule()
    document.field(_("Beneficiary"), account.name)
    document.field(_("Amount"), money(payment.amount, payment.currency))
    document.field(_("Due date"), boleto.formatted_due_date(payment.boleto_expires_at))
    document.field(_("Payer"), _payer(payment))
    document.field(_("Digitable line"), boleto.formatted_line(payment.boleto_line))
    document.space(16)
    document.barcode_itf(payment.boleto_barcode)
    document.space(16)
    document.text(_("Reference %(id)s", id=payment.id), size=8)
    return document.to_bytes()


def _payer(payment: Transaction) -> str:
    """The "Pagador" block: the payer's name, then the formatted CPF or CNPJ it is billed to."""
    name = payment.customer_name or _("Name not provided")
    tax_id = payment.customer_document
    if tax_id is None:
        return "\n".join([name, _("CPF/CNPJ not provided")])
    kind = documents.tax_id_kind(tax_id)  # CPF or CNPJ, the names Brazilian documents go by
    if kind is None:
        return "\n".join([name, _("Document %(number)s", number=documents.formatted(tax_id))])
    return f"{name}\n{kind} {documents.formatted(tax_id)}"


def _refunds(document: PdfDocument, payment: Transaction) -> None:
    refunded = db.session.scalars(
        sa.select(Refund)
        .where(
            Refund.transaction_id == payment.id,
            Refund.automatic.is_(False),  # returns of a Pix that did not pay this transaction
            Refund.status == RefundStatus.REFUNDED,
        )
        .order_by(Refund.created_at)
    )
    for refund in refunded:
        document.field(
            _("Refunded"),
            _(
                "%(amount)s on %(time)s",
                amount=money(refund.amount, refund.currency),
                time=local_datetime(refund.completed_at),
            ),
        )


def _masked(document: str) -> str:
    """Only the middle digits show, as Brazilian bank receipts print a CPF: ***.456.789-**."""
    if len(document) <= 6:
        return "*" * len(document)
    keep = document[3:-2]
    return "*" * 3 + keep + "*" * 2
