"""Shared plumbing: the app, settings, database, identity (hub, auth, authz), errors, limits,
audit, idempotency, the ORM base, and confinement of user code (system accounts, file modes)."""
