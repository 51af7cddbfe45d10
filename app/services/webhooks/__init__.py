"""Webhooks: endpoints, the outbox relay, signed delivery with retries, and the delivery log.

Import the module that owns what you need (nothing is re-exported here). Each module imports
only those listed below it, so there is no cycle:

- `relay`: events (the outbox) and resends become deliveries, queued after commit; who
  listens to an event (subscriptions, a transaction's `webhookUrl`).
- `log`: the delivery log (filters, export rows, counts by status, one delivery).
- `delivery`: one attempt's life in the database: the claim under a lease, the per-endpoint
  concurrency limit, the signed request, the outcome, retries and dead letters.
- `alerts`: consecutive dead letters per endpoint, the owners' e-mail, the failing list.
- `endpoints`: endpoint CRUD, secrets, subscriptions, and whether resending is allowed.
- `transport`: the HTTP POST of one attempt: pinned addresses, a hard deadline, no
  redirects or proxies, every failure an `Attempt`.
- `addresses`: where an endpoint may point (URL rules, public addresses only: SSRF).
"""
