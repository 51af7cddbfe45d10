"""Periodic jobs, declared as data for `rq cron app.cron` (RQ's cron scheduler).

The scheduler only enqueues; the jobs run in the RQ workers (`python worker.py`).
"""

from rq import cron

from app.config import load_settings
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

PERIODIC_QUEUE = "periodic"
settings = load_settings()

cron.register(maintenance.prune_idempotency_keys, PERIODIC_QUEUE, interval=3600)
cron.register(maintenance.prune_revoked_tokens, PERIODIC_QUEUE, interval=3600)
cron.register(
    charges.expire_charges, PERIODIC_QUEUE, interval=settings["CHARGE_EXPIRY_SWEEP_SECONDS"]
)
cron.register(
    wallets.release_settlements,
    PERIODIC_QUEUE,
    interval=settings["SETTLEMENT_RELEASE_SWEEP_SECONDS"],
)
cron.register(payouts.sweep_payouts, PERIODIC_QUEUE, interval=settings["PAYOUT_SWEEP_SECONDS"])
cron.register(webhooks.sweep_webhooks, PERIODIC_QUEUE, interval=settings["WEBHOOK_SWEEP_SECONDS"])
cron.register(
    payments.sweep_payments, PERIODIC_QUEUE, interval=settings["PAYMENT_FINALISE_SWEEP_SECONDS"]
)
cron.register(refunds.poll_refunds, PERIODIC_QUEUE, interval=settings["REFUND_POLL_SECONDS"])
cron.register(
    disputes.sweep_dispute_notices,
    PERIODIC_QUEUE,
    interval=settings["DISPUTE_NOTICE_SWEEP_SECONDS"],
)
if settings.get("API_PIX_BASE_URL"):  # reconciliation only with a live PSP configured
    cron.register(
        api_pix.reconcile_received_pix,
        PERIODIC_QUEUE,
        interval=settings["API_PIX_RECONCILE_SECONDS"],
    )
