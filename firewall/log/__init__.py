"""The hash-chained event log: events, the compact batch format, NDJSON and signed checkpoints."""
