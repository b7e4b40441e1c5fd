"""Shared set-up of the probes that play one coding agent in one session.

The agent is ``coder`` working for the user ``alice``, on a project of the probe's own
(:func:`~gnomon.probes.runner.project_for`), so probes never read each other's memories.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gnomon.firewall import open as open_firewall
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.host.session import Session
from gnomon.probes.runner import project_for


@contextmanager
def coder_session(url: str, name: str) -> Iterator[tuple[Firewall, Session]]:
    """A firewall opened on ``url`` and the coding agent's session on probe ``name``'s project."""
    with (
        open_firewall(url) as wall,
        wall.session(project=project_for(name), actor="coder", user="alice") as s,
    ):
        yield wall, s


__all__ = ["coder_session"]
