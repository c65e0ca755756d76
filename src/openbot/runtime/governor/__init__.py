"""The turn governor: admission, the bounded mailbox, staleness, backlog collapse, disposals (DESIGN §7)."""
