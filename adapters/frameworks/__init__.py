"""Guarded tools for agent frameworks: each module turns
:class:`~firewall.host.guard.GuardedTool` objects into the framework's own tool type, so a held or
denied call comes back as an ordinary tool result the model can re-plan on."""
