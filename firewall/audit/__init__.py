"""Reading the log back: why, the trust report, replay, rebuild, session lists and the import
re-check."""
