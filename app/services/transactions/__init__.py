"""Money coming in: one `Transaction` record, read through two wire formats.

A Pix charge (`/v1/charges`, `/v1/pix/charges`) and a payment (`/v1/payments`) are the same
row; the formats in `app.formats` decide what each surface shows. One module per concern:

- `lifecycle`: the state table and the one `transition` that writes a status and its events.
- `charges`: Pix charges: creation with the contract's body rules, lookup, listing, expiry.
- `payments`: payments on every method: creation, finalisation with the provider, listing,
  cancelling, the operations around them.
- `pix_payments`: a Pix heard of (webhook, poll, reconciliation, simulated payer): matching it
  to a charge, the payer lock, paying, crediting, returning what cannot be kept.
- `settlement`: crediting a paid transaction, whatever the method, fees booked apart.
- `refunds`, `refund_states`, `refund_totals`: refunds, their state table and how much of a
  transaction is already on its way back.
- `held_payment_review`: the back office's queue of Pix payments held for review.
- `fraud`: the velocity guard: how many live charges a payer or an account may have open.
- `receipts`: the PDFs about a transaction: the payment receipt and the boleto slip.
- `payment_stats`: the success rate, volumes and time to pay over a period.
"""
