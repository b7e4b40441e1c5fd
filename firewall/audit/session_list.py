"""The sessions a store holds, with their event counts: what ``gnomon sessions list`` shows.

A store keeps each session's header (:class:`~firewall.model.chain.SessionInfo`) as a projection,
but
no index of sessions; the list is read from the event log in one pass, counting each session's
events, then each header is read from the projection (so ``ended_at`` is the current one).

>>> from gnomon import firewall
>>> wall = firewall.open("memory://")
>>> with wall.session(project="shop", actor="coder", user="alice") as s:
...     _ = s.remember("We deploy on Fridays")
>>> [(x.info.project, x.info.actor, x.events) for x in list_sessions(wall.store)]
[('shop', 'coder', 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gnomon.firewall.model.chain import SessionInfo
from gnomon.firewall.store.base import Store


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session: its header and how many events it wrote."""

    info: SessionInfo
    events: int

    def to_json(self) -> dict[str, Any]:
        i = self.info
        return {
            "id": i.id,
            "project": i.project,
            "actor": i.actor,
            "user": i.user,
            "started_at": i.started_at.isoformat(),
            "ended_at": i.ended_at.isoformat() if i.ended_at else None,
            "events": self.events,
        }


def list_sessions(
    store: Store, *, project: str | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """Sessions newest first (by start), optionally of one ``project``, at most ``limit``."""
    counts: dict[str, int] = {}
    for event in store.events():
        if event.session_id is not None and (project is None or event.project == project):
            counts[event.session_id] = counts.get(event.session_id, 0) + 1
    found = []
    for ident, events in counts.items():
        info = store.get_session(ident)
        if info is not None and (project is None or info.project == project):
            found.append(SessionSummary(info, events))
    found.sort(key=lambda x: (x.info.started_at, x.info.id), reverse=True)
    return found if limit is None else found[:limit]


__all__ = ["SessionSummary", "list_sessions"]
