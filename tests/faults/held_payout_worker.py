"""`python worker.py` whose sandbox payout call is logged and then held while a gate file
exists: the provider is mid-call for as long as the test wants, so it can kill the worker
there. `python -m tests.faults.held_payout_worker`, with FAULT_PAYOUT_CALLS (the log, one
payout reference a line) and FAULT_PAYOUT_GATE (the file that holds the call) set."""

import os
import time
from pathlib import Path

import worker
from app.providers.base import PayoutRequest, PayoutSent
from app.providers.sandbox import SandboxProvider

settle = SandboxProvider.payout


def held_payout(provider: SandboxProvider, request: PayoutRequest) -> PayoutSent:
    with Path(os.environ["FAULT_PAYOUT_CALLS"]).open("a") as calls:
        calls.write(request.reference + "\n")
    while Path(os.environ["FAULT_PAYOUT_GATE"]).exists():
        time.sleep(0.05)
    return settle(provider, request)


if __name__ == "__main__":
    SandboxProvider.payout = held_payout
    worker.main()
