"""Periodic jobs, declared as data for `rq cron app.cron` (RQ's cron scheduler).

The scheduler only enqueues, each job on its domain's queue; the jobs run in the RQ workers
that take that queue (`python worker.py money` or `webhooks`).
"""

from rq import cron

from app.config import load_settings
from app.extensions import DEFAULT_QUEUE, MONEY_QUEUE, WEBHOOK_QUEUE
from app.jobs import (
    api_pix,
    charges,
    disputes,
    maintenance,
    payments,
    payouts,
    refunds,
    wallets,
    webhooks,
)

settings = load_settings()

cron.register(maintenance.prune_idempotency_keys, DEFAULT_QUEUE, interval=3600)
cron.register(maintenance.prune_revoked_tokens, DEFAULT_QUEUE, interval=3600)
cron.register(charges.expire_charges, MONEY_QUEUE, interval=settings["CHARGE_EXPIRY_SWEEP_SECONDS"])
cron.register(
    wallets.release_settlements,
    MONEY_QUEUE,
    interval=settings["SETTLEMENT_RELEASE_SWEEP_SECONDS"],
)
cron.register(payouts.sweep_payouts, MONEY_QUEUE, interval=settings["PAYOUT_SWEEP_SECONDS"])
cron.register(webhooks.sweep_webhooks, WEBHOOK_QUEUE, interval=settings["WEBHOOK_SWEEP_SECONDS"])
cron.register(
    payments.sweep_payments, MONEY_QUEUE, interval=settings["PAYMENT_FINALISE_SWEEP_SECONDS"]
)
cron.register(
    payments.fold_payment_totals, DEFAULT_QUEUE, interval=settings["PAYMENT_TOTALS_FOLD_SECONDS"]
)
cron.register(refunds.poll_refunds, MONEY_QUEUE, interval=settings["REFUND_POLL_SECONDS"])
cron.register(
    disputes.sweep_dispute_notices,
    DEFAULT_QUEUE,
    interval=settings["DISPUTE_NOTICE_SWEEP_SECONDS"],
)
if settings.get("API_PIX_BASE_URL"):  # reconciliation only with a live PSP configured
    cron.register(
        api_pix.reconcile_received_pix,
        MONEY_QUEUE,
        interval=settings["API_PIX_RECONCILE_SECONDS"],
    )
