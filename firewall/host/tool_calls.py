"""Tool calls handed to :meth:`firewall.host.session.Session.observe_many`, and what it returns.

A :class:`ToolCall` holds the arguments of one :meth:`~firewall.host.session.Session.observe` call.
It is only data: the session checks and labels each call exactly as ``observe`` does (a
channel must be one the host opened for the session's project, an asserted origin can only
lower trust), so a batch can do nothing a single call could not. :class:`Observed` is what
either method returns per call.

>>> from gnomon.firewall.host.tool_calls import ToolCall
>>> ToolCall(tool="web.fetch", content="the page text").sensitivity.value
'internal'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gnomon.firewall.host.channels import Channel
from gnomon.firewall.model.chain import Belief, Observation
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Sensitivity

if TYPE_CHECKING:
    from gnomon.firewall.gate.adoption import NewBelief


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call to record: the keyword arguments of
    :meth:`~firewall.host.session.Session.observe`."""

    tool: str
    content: object
    args: Mapping[str, Any] | None = None
    origin: Origin | Channel | None = None
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    invocation_id: str | None = None
    subject: str | None = None
    predicate: str | None = None
    expires_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    tool_version: str | None = None


@dataclass(frozen=True, slots=True)
class Observed:
    """What :meth:`Session.observe` returns: the envelope belief and one belief per block."""

    observation: Observation
    envelope: Belief
    content: tuple[Belief, ...]

    @property
    def beliefs(self) -> tuple[Belief, ...]:
        return (self.envelope, *self.content)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One checked call's observation and adopted beliefs, before they are written."""

    tool: str
    observation: Observation
    envelope: NewBelief
    made: tuple[NewBelief, ...]
    content_origin: Origin
    channel_id: str | None
    tool_version: str | None

    def observed(self, current: Mapping[str, Belief]) -> Observed:
        """The call's beliefs as written (``current``: after contradiction detection)."""
        return Observed(
            self.observation,
            current[self.envelope.belief.id],
            tuple(current[m.belief.id] for m in self.made),
        )


__all__ = ["Observed", "Prepared", "ToolCall"]
