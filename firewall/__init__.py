"""Gnomon: a memory firewall for AI agents (public API is assembled at the end of the core)."""
