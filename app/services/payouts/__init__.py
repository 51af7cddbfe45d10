"""Payouts (wire name: withdrawals): money leaving a merchant's wallet, one module per concern:

- `lifecycle`: the state table and the one `transition` that writes a status and its events;
  the row lock and the audit line every decision takes.
- `requesting`: a merchant's request: destination checks per type, the PENDING payout, and
  cancelling it (and whether it may be cancelled) while nothing is debited.
- `funding`: how much a payout may take: the contract's caps on BRL payouts and the available
  balance covering amount + fee.
- `decisions`: staff approving (the debit) or rejecting, auto-approval for flagged accounts,
  and the back office's queue of what waits for them.
- `processing`: sending an approved payout through its provider, the sweep's due list, and
  booking its completion or failure (the refund).
- `listing`: finding an account's payouts: one by id, a page, every row for an export; the
  PENDING ones of every account.

Money moves at three points, each a unique ledger posting so it can never happen twice: the
approval's debit (`decisions.DEBIT`), the completion and the failure's refund
(`processing.COMPLETION`, `processing.REFUND`).
"""
