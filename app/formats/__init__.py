"""Public wire formats: what a merchant sees of a record, built from an allowlist.

The API responses and the webhook events use the same functions here, so an event's
`data.object` is exactly what the REST API returns for the same record.
"""
