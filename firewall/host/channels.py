"""Channels: the only way an authority-bearing origin enters the firewall.

A user's statement, an operator's probe and a trusted tool's own output are trusted because of
*who* produced them, and only the host knows that. So the host, which holds the
:class:`~firewall.Firewall`, opens a :class:`Channel` for such an origin, and writes that carry
the channel (``session.observe(..., origin=channel)``, ``memory.add(..., gnomon_origin=channel)``)
are recorded with the channel's origin, a host-observed tool envelope and ``validated`` trust.
Everything an agent-facing path asserts on its own is checked by :func:`caller_origin`: it may
name external, imported or agent origins, or joins with them (it can only *lower* trust), and a
user, probe or tool origin without a channel is refused with
:class:`~firewall.model.errors.UnattestedOriginError`.

A channel is a capability: whoever holds it writes with its origin, so the host keeps it
host-side (inside a guarded client's private configuration, or in the harness code that receives
the user's chat message), never in the agent's reach. It cannot be forged: the firewall that
opened it keeps it in a registry, and a channel object that is not in the registry of the
session's firewall (built by hand, copied, or opened by another firewall) is refused with
:class:`~firewall.model.errors.ForgedChannelError`.

>>> from gnomon import firewall
>>> from gnomon.firewall import Origin
>>> wall = firewall.open("memory://")
>>> chat = wall.channel(Origin.user("alice"))
>>> with wall.session(project="shop", actor="coder", user="alice") as s:
...     said = s.observe(tool="chat", content="We deploy on Fridays", origin=chat)
...     said.content[0].truth_status.value
'supported'
"""

from __future__ import annotations

from gnomon.firewall.model.errors import ForgedChannelError, UnattestedOriginError
from gnomon.firewall.model.origin import Origin, OriginClass
from gnomon.firewall.model.states import ObservationTrust


class Channel:
    """A host-opened channel for one origin. Obtain it from :meth:`Firewall.channel`."""

    __slots__ = ("__weakref__", "grant_id", "id", "origin", "project")

    id: str
    origin: Origin
    project: str | None
    grant_id: str | None

    def __init__(self, channel_id: str, origin: Origin, project: str | None, grant_id: str | None):
        for name, value in (
            ("id", channel_id),
            ("origin", origin),
            ("project", project),
            ("grant_id", grant_id),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Channel is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Channel is immutable; cannot delete {name!r}")

    @property
    def trust(self) -> ObservationTrust:
        """The trust of observations written through the channel: a probe's are synthetic."""
        if OriginClass.PROBE in self.origin.classes:
            return ObservationTrust.SYNTHETIC
        return ObservationTrust.VALIDATED

    def __repr__(self) -> str:
        return f"Channel({self.id}, {self.origin.describe()})"

    def __copy__(self) -> Channel:
        raise ForgedChannelError(
            f"channel {self.id} cannot be copied",
            hint="pass the channel object the host opened; copies are never accepted",
        )

    def __deepcopy__(self, memo: object) -> Channel:
        return self.__copy__()

    def __reduce__(self) -> str:
        raise ForgedChannelError(
            f"channel {self.id} cannot be pickled: it is a capability of one firewall object",
            hint="open a channel in each process with Firewall.channel(...)",
        )


#: What a write path accepts as its origin: a caller's own label, or a host channel.
WriteOrigin = Origin | Channel


def caller_origin(origin: object, *, what: str) -> Origin | None:
    """Check an origin a caller asserted on an agent-facing path; ``None`` passes through.

    A plain :class:`Origin` may carry at most the agent's own integrity (``derived``):
    external, imported and agent origins, and joins that include them, can only lower trust.
    A user, probe or tool origin on its own is authority-bearing and is refused: the host opens
    a channel for it.
    """
    if origin is None:
        return None
    if isinstance(origin, Channel):
        raise TypeError("caller_origin() takes plain origins; resolve channels first")
    if type(origin) is not Origin:
        from gnomon.firewall.model.errors import InvalidOriginError

        raise InvalidOriginError(
            f"{what} must be a firewall.Origin or a host Channel, got {type(origin).__name__}",
            hint="use Origin.external('...') for content someone else wrote",
        )
    # Rebuilt through validation: a label made with model_construct (any class at any
    # integrity, fields of any type) is judged by what it is, not by what it says.
    origin = _revalidated(origin)
    if origin.authority_bearing:
        named = origin.describe()
        raise UnattestedOriginError(
            f"{what} asserts an authority-bearing origin ({named}) without a host channel; "
            "user, probe and tool origins are attested only by the host",
            hint="the host opens one with wall.channel(Origin.user('alice')) and passes the "
            "channel as origin=; agent-facing code may only assert external, imported or "
            "agent origins",
        )
    return origin


def reported_origin(asserted: Origin | None, tool: str, actor: str) -> Origin:
    """The label of content an agent reports reading without a channel: whatever source it
    names (:func:`caller_origin`, or ``external:tool:<tool>``), joined with the agent itself.
    Only the agent says what it read, so the text is the agent's too: exports treat it as the
    agent's free text (:mod:`firewall.audit.free_text`), whatever sensitivity it claims.

    >>> reported_origin(None, "web_fetch", "coder").describe()
    'untrusted [agent:coder, external:tool:web_fetch]'
    """
    return Origin.join(asserted or Origin.external(f"tool:{tool}"), Origin.agent(actor))


def _revalidated(origin: Origin) -> Origin:
    from gnomon.firewall.model.errors import InvalidOriginError

    fields = origin.__dict__
    try:
        return Origin(
            classes=fields.get("classes"),
            origin_ids=fields.get("origin_ids"),
            integrity=fields.get("integrity"),
        )
    except InvalidOriginError:
        raise
    except Exception as exc:  # a constructed label whose fields are not even iterable
        raise InvalidOriginError(
            f"invalid origin label: {type(exc).__name__}",
            hint="build labels with Origin.external(...), Origin.agent(...) or Origin.join",
        ) from exc


__all__ = ["Channel", "WriteOrigin", "caller_origin", "reported_origin"]
