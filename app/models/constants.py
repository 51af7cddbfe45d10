"""Domain rules several layers apply, defined once so the API, the services and the dashboard
cannot drift apart.

Currency codes are written in either case and applied with `fullmatch` (the API publishes
them anchored, `Pattern.whole`). There are two rules on purpose: a payment's currency may
be a crypto ticker with digits, a wallet's balance is asked for by letters only.
"""

import re

from app.models.transaction import TransactionStatus

PAYMENT_CURRENCY_CODE = re.compile(r"[A-Za-z0-9]{3,8}")
WALLET_CURRENCY_CODE = re.compile(r"[A-Za-z]{3,8}")

SETTLED_STATUSES = frozenset({TransactionStatus.PAID, TransactionStatus.APPROVED})
# A dispute (MED or card chargeback) holds the money; refunds wait for its decision.
DISPUTED_STATUSES = frozenset({TransactionStatus.DISPUTE, TransactionStatus.CHARGEBACK})
