"""What the API calls: one service per resource, each a transaction and its after-commit effects.

Routes hand a service a validated command and get a typed view back; they never open a session,
write SQL or wake a worker themselves.
"""
