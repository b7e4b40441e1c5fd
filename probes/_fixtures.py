"""Shared set-up of the probes that play one coding agent in one session.

The agent is ``coder`` working for the user ``alice``, on a project of the probe's own
(:func:`~gnomon.probes.runner.project_for`), so probes never read each other's memories. The
helpers below are the scenario's ordinary moves (the user speaks, the agent reads a file) and the
expectations most probes state, so that each probe reads as its attack.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gnomon.firewall import Belief, Observed, Origin, RetrievalStatus, TruthStatus
from gnomon.firewall import open as open_firewall
from gnomon.firewall.gate.recall import RecallResult
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.clock import Clock, utcnow
from gnomon.probes.runner import Checks, project_for


@contextmanager
def coder_session(
    url: str, name: str, *, clock: Clock = utcnow, actor: str = "coder"
) -> Iterator[tuple[Firewall, Session]]:
    """A firewall opened on ``url`` (reading time from ``clock``) and the session of ``actor``
    (the coding agent by default) on probe ``name``'s project.

    The firewall outlives the session: a probe that acts after the agent's run calls
    ``s.end()`` first (ending twice is harmless), and opens a later run with
    ``wall.session(project=s.project, ...)``."""
    with (
        open_firewall(url, clock=clock) as wall,
        wall.session(project=project_for(name), actor=actor, user="alice") as s,
    ):
        yield wall, s


def user_says(wall: Firewall, s: Session, statement: str, **fields: Any) -> Belief:
    """The user ``alice`` states ``statement`` in chat, through the host's user channel; the
    belief it becomes. ``fields`` are more of :meth:`Session.observe`'s (``subject=``...)."""
    said = s.observe(
        tool="chat", content=statement, origin=wall.channel(Origin.user("alice")), **fields
    )
    (belief,) = said.content
    return belief


def agent_reads(s: Session, path: str, content: str) -> Observed:
    """The agent reports reading the repository file ``path`` (no host channel): ``content``
    carries the file's external origin, and the envelope is only the agent's word."""
    return s.observe(
        tool="read_file",
        args={"path": path},
        content=content,
        origin=Origin.external(f"file:{path}"),
    )


#: How the gate adopts what it does not trust (external content, the agent's own writes).
UNVERIFIED_RESTRICTED = (TruthStatus.UNVERIFIED, RetrievalStatus.RESTRICTED)
#: How it adopts what the host attests (a user's statement, a host-observed envelope).
SUPPORTED_NORMAL = (TruthStatus.SUPPORTED, RetrievalStatus.NORMAL)


def expect_states(
    c: Checks, belief: Belief, states: tuple[TruthStatus, RetrievalStatus], expectation: str
) -> None:
    """Expect ``belief`` to stand at ``states``: its truth and retrieval status."""
    c.expect(
        (belief.truth_status, belief.retrieval_status) == states,
        expectation,
        got=(belief.truth_status.value, belief.retrieval_status.value),
    )


def expect_accepted(
    c: Checks, result: RecallResult, belief_id: str, expectation: str, *, accepted: bool = True
) -> None:
    """Expect the recall ``result`` to accept ``belief_id`` (or, with ``accepted=False``, not)."""
    c.expect((belief_id in result.accepted_ids) == accepted, expectation, got=result.accepted_ids)


__all__ = [
    "SUPPORTED_NORMAL",
    "UNVERIFIED_RESTRICTED",
    "agent_reads",
    "coder_session",
    "expect_accepted",
    "expect_states",
    "user_says",
]
