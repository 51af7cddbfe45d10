"""Business rules, one module per domain, shared by the API, the dashboard, jobs and the CLI.

Services take plain arguments, return models or raise `app.errors.ApiError` subclasses, and
flush but never commit: the caller (a view, a job, a command) owns the transaction.
"""
