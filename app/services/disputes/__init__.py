"""Dispute cases (MED, chargebacks), one module per concern:

- `cases`: the case's life and the money each step moves: opening on the dispute channel's
  notice, the merchant's appeal or acceptance, the channel's evidence request and decision,
  staff confirming a differing amount.
- `allowances`: whether an action on a case is allowed now (appeal, accept, attach evidence,
  an outcome that sends money to the payer).
- `listing`: finding an account's cases: one by id, pages with a keyset cursor, open cases
  by deadline, the public `med_case` with its evidence count.
- `evidence`: evidence files in the evidence storage: upload address, confirmation, listing,
  view address.
- `notices`: the e-mails to the account's managers when a case opens and is resolved.

`dispute_holds` (what a case holds) and `dispute_review` (the back office's desk) are
services of their own beside this package.
"""
