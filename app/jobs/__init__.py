"""RQ jobs: plain functions that call services, safe to run twice, run with an app context."""
