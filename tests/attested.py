"""Host-attested writes for tests: the one place tests obtain authority-bearing origins.

User, probe and a trusted tool's own output are authority-bearing origins. Agent-facing code
cannot assert them; only the host can, through a channel it opens on the
:class:`~firewall.Firewall`. Tests that need a trusted fact go through these helpers, so the
way the host attests an origin is written once::

    fact = observe_as(wall, s, Origin.user("alice"), tool="chat", content="We deploy on Fridays")
    memory.add("...", gnomon_origin=attested(wall, Origin.user("alice")))
"""

from __future__ import annotations

from typing import Any

from gnomon.firewall import Firewall, Origin
from gnomon.firewall.host.session import Observed, Session


def attested(wall: Firewall, origin: Origin, *, project: str | None = None) -> Any:
    """What to pass as ``origin=`` / ``gnomon_origin=`` for a host-attested write of ``origin``:
    a channel the host opens on ``wall`` (one per origin, cached on the firewall object)."""
    cache: dict[tuple[Origin, str | None], Any] = wall.__dict__.setdefault("_test_channels", {})
    key = (origin, project)
    if key not in cache:
        cache[key] = wall.channel(origin, project=project)
    return cache[key]


def observe_as(wall: Firewall, session: Session, origin: Origin, **kwargs: Any) -> Observed:
    """``session.observe(...)`` with ``origin`` attested by the host."""
    return session.observe(origin=attested(wall, origin), **kwargs)


__all__ = ["attested", "observe_as"]
