"""Money coming in: one `Transaction` record, read through two wire formats.

A Pix charge (`/v1/charges`, `/v1/pix/charges`) and a payment (`/v1/payments`) are the same
row; the formats in `app.formats` decide what each surface shows. One module per concern:

- `lifecycle`: the state table and the one `transition` that writes a status and its events.
- `charges`: Pix charges: creation with the contract's body rules, lookup, listing.
- `charge_expiry`: unpaid charges and payments past their deadline, on read and by the sweep.
- `payments`: payments on every method: creation with the rules between its fields, lookup,
  cancelling, settling the non-Pix methods.
- `payment_finalisation`: asking the provider for a new payment's instructions, and the
  payments whose finalisation job never ran.
- `payment_listing`: the payments list: filters, sorting by any field, the CSV export's rows.
- `payment_operations`: re-announcing a payment's status, the provider's live view of it.
- `pix_payments`: a Pix heard of (webhook, poll, reconciliation, simulated payer): matching it
  to a charge, the payer lock, paying, crediting, returning what cannot be kept.
- `settlement`: crediting a paid transaction, whatever the method, fees booked apart.
- `refunds`: refunds as the merchant asks for them: may it be refunded, the request, lookup,
  cancelling one that waits for money.
- `refund_funding`: a refund's money: funding it from the wallet, ending the ones that wait,
  giving back what funding took when it fails.
- `refund_submission`: refunds at the provider: submitting a funded one, polling the ones in
  progress.
- `refund_states`, `refund_totals`: the refund state table, and how much of a transaction is
  already on its way back.
- `held_payment_review`: the back office's queue of Pix payments held for review.
- `fraud`: the velocity guard: how many live charges a payer or an account may have open.
- `receipts`: the PDFs about a transaction: the payment receipt and the boleto slip.
- `payment_stats`: the success rate, volumes and time to pay over a period.
"""
