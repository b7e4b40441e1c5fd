"""A Session: what one agent run may do with memory, and what it has read.

A session remembers the join of the origin labels of everything it has read (observed content
and recalled memories). Every agent-authored write in the session inherits that join, and
``derived_from`` can only add the labels of further inputs: this closes summarization
laundering, where the agent paraphrases a poisoned page into its "own" memory.

A session is what agent-facing code holds, and it cannot mint authority:

* it has no public route to the host's :class:`~firewall.Firewall`, its store or its keys;
* an origin it is given can only lower trust: user, probe and tool origins enter only through a
  :class:`~firewall.host.channels.Channel` the host opened (anything else is refused with
  :class:`~firewall.model.errors.UnattestedOriginError`), and a tool call the agent merely *reports*
  gets an agent-reported envelope, not a host-observed one;
* its label only gets worse: every agent-authored write joins everything the session has read,
  whatever ``derived_from`` names;
* nothing here promotes a belief except the policy acting on independent, stronger
  corroboration that came through a host channel and that the host linked to the belief
  (:meth:`Session.corroborate` with ``via=``), which the gate checks; an observation made after
  one of this session's actions never promotes a belief that action rested on;
* it knows only its own project, and only beliefs outside the privileged states: any other id
  is unknown to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gnomon.firewall.audit.erasure import ERASURE_REQUESTED
from gnomon.firewall.audit.recall_credentials import withhold_credentials
from gnomon.firewall.gate.adoption import (
    Context,
    adopt,
    clean_extracted,
    independence_group,
    quality_for,
    user_statement,
)
from gnomon.firewall.gate.contradictions import detect, detect_on_evidence
from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.gate.policy import (
    ContextPolicy,
    floor_reasons,
    resolve,
    resolve_with_digest,
    revalidate_with_digest,
)
from gnomon.firewall.gate.recall import (
    RecallResult,
)
from gnomon.firewall.gate.retrieval import collect
from gnomon.firewall.host.channels import Channel, caller_origin, reported_origin
from gnomon.firewall.host.decay import decay_read
from gnomon.firewall.host.tool_calls import Observed, Prepared, ToolCall
from gnomon.firewall.kernel.provenance import Input, Inputs
from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.model.arguments import check_value, checked_call
from gnomon.firewall.model.chain import (
    Action,
    Belief,
    Decision,
    EvidenceItem,
    Observation,
    Outcome,
    SessionInfo,
)
from gnomon.firewall.model.content import (
    MAX_QUERY_CHARS,
    MAX_SUMMARY_CHARS,
    block_hash,
    checked_args,
    checked_name,
    checked_text,
    checked_tool,
    content_blocks,
    render_args,
    statement_text,
)
from gnomon.firewall.model.errors import (
    InputError,
    MissingGrantError,
    SelfPromotionError,
    UnknownIdError,
)
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.logbook import withheld_read
from gnomon.firewall.model.origin import Integrity, Origin, OriginClass, join_all
from gnomon.firewall.model.states import (
    ClaimKind,
    EvidenceQuality,
    EvidenceRelation,
    ExtractionMethod,
    ObservationTrust,
    Scope,
    Sensitivity,
    TruthStatus,
)

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

MAX_K = 200

#: What a session may have read and still extract clean facts: users and tool envelopes, and
#: the agent's own clean writing; never external or imported text.
_SESSION_CLEAN = frozenset({OriginClass.USER, OriginClass.TOOL, OriginClass.AGENT})


def _highest(levels: Iterable[Sensitivity]) -> Sensitivity:
    return max(levels, key=lambda s: s.rank, default=Sensitivity.PUBLIC)


def _input(origin: Origin, ref: str, *, memory: bool = False) -> Input:
    """The provenance of what ``ref`` showed: the user's words, trusted memory (an accepted
    belief with a trusted label), host-observed content, or untrusted text."""
    if origin.integrity < Integrity.OBSERVED:
        return Input("untrusted", ref, origin.describe())
    if memory:
        return Input("memory", ref, origin.describe())
    if OriginClass.USER in origin.classes:
        return Input("user", ref, origin.describe())
    return Input("tool", ref, origin.describe())


class Session:
    """One agent run. Obtain it from :meth:`Firewall.session` (a context manager)."""

    def __init__(self, wall: Firewall, info: SessionInfo) -> None:
        # Host objects stay private: agent-facing code gets no public route to the firewall.
        self._wall = wall
        self.info = info
        self._label: Origin | None = None
        self._sensitivity = Sensitivity.PUBLIC
        self._ctx = Context(
            project=info.project, actor=info.actor, user=info.user, session_id=info.id
        )
        self._ended = False
        # every value this session read, with where it came from: argument provenance
        self._inputs = Inputs()

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def label(self) -> Origin | None:
        """The join of everything this session has read (``None`` before the first read).

        Read-only: it only ever gets worse, by what the session observes and recalls."""
        return self._label

    @property
    def read_untrusted(self) -> bool:
        """Whether this session has read anything but the user's, a tool envelope's or its own
        agent's text (external content, imports, probes): from then on, what it writes is
        steerable by what it read. Then a message it passes as ``role="user"`` is not minted
        as the user's (:meth:`adapters.guard.Guard.message_origin`) and a fact its store
        extracts is not ``extracted`` (:meth:`extract`)."""
        return self._label is not None and not self._label.classes <= _SESSION_CLEAN

    @property
    def sensitivity(self) -> Sensitivity:
        """The highest sensitivity this session has read (``public`` before the first read).

        Read-only, and it only ever rises: it is the floor of every label the agent's own
        writes take (:meth:`remember`, an :meth:`observe` without a channel), so what a session
        read cannot be written back below its label. It cannot see other sessions: what the
        agent read in one and writes from memory in the next is kept out of a shipped export
        because shipping treats the agent's writes as free text
        (:mod:`firewall.audit.free_text`)."""
        return self._sensitivity

    def _floor(self, asked: Sensitivity) -> Sensitivity:
        if not isinstance(asked, Sensitivity):
            raise InputError(
                f"sensitivity must be a Sensitivity, got {type(asked).__name__}",
                hint="pass e.g. sensitivity=Sensitivity.SECRET",
            )
        return asked if asked.rank >= self._sensitivity.rank else self._sensitivity

    @property
    def project(self) -> str:
        return self.info.project

    @property
    def actor(self) -> str:
        return self.info.actor

    @property
    def user(self) -> str | None:
        return self.info.user

    @classmethod
    @checked_call
    def start(
        cls,
        wall: Firewall,
        *,
        project: str,
        actor: str,
        user: str | None,
        model_id: str | None = None,
        prompt_id: str | None = None,
        tool_version: str | None = None,
    ) -> Session:
        """A new session, logged as ``session.started``; ``model_id``, ``prompt_id`` and
        ``tool_version`` (None: not known) are recorded with it and named by its events."""
        info = SessionInfo(
            id=new_id("ses"),
            project=checked_name("project", project),
            actor=checked_name("actor", actor),
            user=checked_name("user", user) if user is not None else None,
            started_at=wall.clock(),
            model_id=model_id,
            prompt_id=prompt_id,
            tool_version=tool_version,
        )
        session = cls(wall, info)
        session._commit("session.started", records=Records(sessions=(info,)))
        return session

    def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        ended = self.info.model_copy(update={"ended_at": self._wall.clock()})
        self.info = ended
        self._commit("session.ended", records=Records(sessions=(ended,)))

    # -- helpers --------------------------------------------------------------------------

    def _versions(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.info.model_id,
            "prompt": self.info.prompt_id,
            "tool_version": self.info.tool_version,
        }
        if extra:
            out.update(extra)
        return out

    def _commit(self, kind: str, **fields: Any) -> int:
        """Commit one event of this session (``fields`` as :meth:`_draft` takes them)."""
        return self._wall.commit(self._draft(kind, **fields))[-1].seq

    def _draft(
        self,
        kind: str,
        *,
        data: Mapping[str, Any] | None = None,
        records: Records | None = None,
        versions: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> EventDraft:
        return self._wall.draft(
            kind,
            actor=self.actor,
            now=now or self._wall.clock(),
            session_id=self.id,
            project=self.project,
            user=self.user,
            data=data,
            records=records,
            versions=self._versions(versions),
        )

    def _read(self, labels: Iterable[Origin], levels: Iterable[Sensitivity] = ()) -> None:
        self._label = join_all([*([self._label] if self._label else []), *labels])
        for level in levels:
            self._sensitivity = self._floor(level)

    def _check_open(self) -> None:
        if self._ended:
            raise InputError(
                f"session {self.id} has ended", hint="open a new one with wall.session(...)"
            )

    def _following(self, kind: str, get: Callable[[str], object | None], ident: str) -> datetime:
        """The time of a record that follows the stored ``kind`` ``ident`` (an action follows
        its decision, an outcome its action); :class:`UnknownIdError` if there is none."""
        self._check_open()
        found = get(ident)
        # another session's decision or action is "unknown" here, like a made-up id: an agent
        # cannot act on another run's decision or report the outcome of another run's action
        if found is None or getattr(found, "session_id", None) != self.id:
            raise UnknownIdError(kind, ident)
        return self._wall.clock()

    # -- writes ---------------------------------------------------------------------------

    @checked_call
    def observe(
        self,
        *,
        tool: str,
        content: object,
        args: Mapping[str, Any] | None = None,
        origin: Origin | Channel | None = None,
        sensitivity: Sensitivity = Sensitivity.INTERNAL,
        invocation_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        expires_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        tool_version: str | None = None,
    ) -> Observed:
        """Record one tool call: an envelope claim, and one claim per content block.

        ``origin`` is where the *content* came from. A plain :class:`Origin` is the caller's
        assertion and can only lower trust: external (the default, fail closed), imported or
        agent; a user, probe or tool origin is refused with
        :class:`~firewall.model.errors.UnattestedOriginError`. A :class:`Channel` the host opened
        attests its origin: the content takes the channel's origin and the envelope ("tool X
        was called and returned N blocks") is the host's own observation, adopted supported.
        Without a channel the envelope is only the agent's report of a call and starts
        unverified like any agent write.
        """
        self._check_open()
        call = ToolCall(
            tool=tool,
            content=content,
            args=args,
            origin=origin,
            sensitivity=sensitivity,
            invocation_id=invocation_id,
            subject=subject,
            predicate=predicate,
            expires_at=expires_at,
            valid_from=valid_from,
            valid_to=valid_to,
            tool_version=tool_version,
        )
        return self._observe_call(call)

    def _observe_call(
        self, call: ToolCall, before: Sequence[EventDraft] = (), *, host_read: bool = False
    ) -> Observed:
        """Host side: :meth:`observe` one call, committing ``before`` (the kernel's
        ``action.executed`` for the call this observes) in the same transaction. With
        ``host_read``, a call without a channel is the host's own read (an adapter adopting what
        it found in its store), labelled with the origin given, not the agent's report."""
        self._check_open()
        tool_version = call.tool_version
        now = self._wall.clock()
        prepared = self._prepare(call, now, host_read=host_read)
        records, contradictions, current = detect(
            self._wall.store, [prepared.envelope, *prepared.made], now
        )
        data: dict[str, Any] = {
            "tool": prepared.tool,
            "blocks": len(prepared.made),
            "contradictions": contradictions,
        }
        if prepared.channel_id is not None:
            data["channel_id"] = prepared.channel_id
        self._wall.commit(
            *before,
            self._draft(
                "observation.recorded",
                data=data,
                records=Records(observations=(prepared.observation,), **records),
                versions={"tool_version": tool_version} if tool_version else None,
                now=now,
            ),
        )
        if prepared.made:
            self._read([prepared.content_origin], [prepared.observation.sensitivity])
            self._record_inputs(prepared)
        return prepared.observed(current)

    def _record_inputs(self, prepared: Prepared) -> None:
        """Index what one call showed, for the provenance of later actions' arguments."""
        source = _input(prepared.content_origin, prepared.observation.id)
        for block in prepared.observation.blocks:
            self._inputs.add(block, source)

    @checked_call
    def observe_many(self, calls: Sequence[ToolCall]) -> list[Observed]:
        """Record many tool calls as **one** chained event (``observations.recorded``):
        each :class:`~firewall.host.tool_calls.ToolCall` is labelled, checked and adopted exactly as
        :meth:`observe` would (a channel must be one the host opened for this session's
        project, an asserted origin can only lower trust, every record is in this session's
        project), and either every call is recorded or, if any is refused, none is.

        Returns one :class:`Observed` per call, in order.
        """
        self._check_open()
        if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
            raise InputError(
                "observe_many() takes a list of ToolCall",
                hint="observe_many([ToolCall(tool=..., content=...), ...])",
            )
        for call in calls:
            if type(call) is not ToolCall:
                raise InputError(
                    f"observe_many() takes ToolCall items, got {type(call).__name__}",
                    hint="wrap each call: ToolCall(tool=..., content=...)",
                )
        if not calls:
            return []
        now = self._wall.clock()
        prepared = [self._prepare(call, now) for call in calls]  # refuses before any write
        made = [m for p in prepared for m in (p.envelope, *p.made)]
        records, contradictions, current = detect(self._wall.store, made, now)
        calls_data: list[dict[str, Any]] = []
        for p in prepared:
            entry: dict[str, Any] = {"tool": p.tool, "blocks": len(p.made)}
            if p.channel_id is not None:
                entry["channel_id"] = p.channel_id
            if p.tool_version is not None:
                entry["tool_version"] = p.tool_version
            calls_data.append(entry)
        self._commit(
            "observations.recorded",
            data={"calls": calls_data, "contradictions": contradictions},
            records=Records(observations=tuple(p.observation for p in prepared), **records),
            now=now,
        )
        read = [p for p in prepared if p.made]
        if read:
            self._read([p.content_origin for p in read], [p.observation.sensitivity for p in read])
            for p in read:
                self._record_inputs(p)
        return [p.observed(current) for p in prepared]

    def _prepare(self, call: ToolCall, now: datetime, *, host_read: bool = False) -> Prepared:
        """One tool call's observation and adopted beliefs, not yet written; raises on
        anything :meth:`observe` refuses."""
        if type(call) is not ToolCall:
            raise InputError(f"expected a ToolCall, got {type(call).__name__}")
        check_value("observe_many()", "calls", call)
        tool = checked_tool(call.tool)
        origin = call.origin
        channel = (
            self._wall.attested_by(origin, project=self.project)
            if isinstance(origin, Channel)
            else None
        )
        if channel is not None:
            content_origin = channel.origin
            envelope_origin = Origin.tool(tool)
            trust = channel.trust
        else:
            asserted = caller_origin(origin, what="observe(origin=...)")
            # a read without a channel is only the agent's word for what it read: its text is
            # the agent's too (the agent class), whatever source it names (issue 21)
            content_origin = (
                asserted or Origin.external(f"tool:{tool}")
                if host_read
                else reported_origin(asserted, tool, self.actor)
            )
            envelope_origin = Origin.join(Origin.tool(tool), Origin.agent(self.actor))
            trust = ObservationTrust.RAW
        checked = checked_args(call.args)
        blocks = content_blocks(call.content, self._wall.max_block_bytes)
        # the agent's own report of a call (no channel) is its write: floored like a note
        sensitivity = call.sensitivity if channel is not None else self._floor(call.sensitivity)
        observation = Observation(
            id=new_id("obs"),
            session_id=self.id,
            project=self.project,
            actor=self.actor,
            user=self.user,
            tool=tool,
            invocation_id=call.invocation_id or new_id("obs"),
            args=checked,
            captured_at=now,
            trust=trust,
            sensitivity=sensitivity,
            origin=content_origin,
            blocks=blocks,
            block_hashes=[block_hash(b) for b in blocks],
            tool_version=call.tool_version,
        )
        rendered = render_args(checked, self._wall.envelope_args)
        envelope = adopt(
            self._ctx,
            kind=ClaimKind.ENVELOPE,
            statement=(
                f"{tool}({rendered}) was called in session {self.id} and returned "
                f"{len(blocks)} block(s)"
            ),
            origin=envelope_origin,
            quality=EvidenceQuality.TOOL_RESULT,
            extraction=ExtractionMethod.TOOL,
            source=observation.id,
            now=now,
            observation_ids=[observation.id],
            sensitivity=sensitivity,
            scope=Scope.SESSION,
        )
        quality = quality_for(content_origin)
        made = [
            adopt(
                self._ctx,
                kind=ClaimKind.CONTENT,
                statement=block,
                origin=content_origin,
                quality=quality,
                extraction=ExtractionMethod.TOOL,
                source=f"{observation.id}#{i}",
                now=now,
                observation_ids=[observation.id],
                subject=call.subject,
                predicate=call.predicate,
                sensitivity=sensitivity,
                expires_at=call.expires_at,
                valid_from=call.valid_from,
                valid_to=call.valid_to,
            )
            for i, block in enumerate(blocks)
        ]
        return Prepared(
            tool=tool,
            observation=observation,
            envelope=envelope,
            made=tuple(made),
            content_origin=content_origin,
            channel_id=None if channel is None else channel.id,
            tool_version=call.tool_version,
        )

    @checked_call
    def remember(
        self,
        statement: str,
        derived_from: Sequence[str] | None = None,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        sensitivity: Sensitivity = Sensitivity.INTERNAL,
        contradicts: Sequence[str] = (),
        expires_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Belief:
        """Record an agent-authored write, adopted unverified and restricted.

        Its label is the agent joined with everything this session has read and with the
        labels of the ``derived_from`` ids: naming inputs can add taint, never remove the
        session's (an agent cannot launder a poisoned read by citing only clean sources).
        Its sensitivity is at least the highest this session has read (:attr:`sensitivity`):
        a note cannot carry what the session read below that text's label."""
        self._check_open()
        text = statement_text(statement, self._wall.max_block_bytes)
        inputs = [
            *(self._labels_of(derived_from) if derived_from is not None else []),
            *([self._label] if self._label else []),
        ]
        origin = Origin.join(Origin.agent(self.actor), *inputs)
        for other in contradicts:
            self._belief(other)
        now = self._wall.clock()
        made = adopt(
            self._ctx,
            kind=ClaimKind.STATEMENT,
            statement=text,
            origin=origin,
            quality=quality_for(origin),
            extraction=ExtractionMethod.LLM,
            source=f"session:{self.id}",
            now=now,
            subject=subject,
            predicate=predicate,
            sensitivity=self._floor(sensitivity),
            expires_at=expires_at,
            valid_from=valid_from,
            valid_to=valid_to,
            contradicts=list(contradicts),
        )
        records, contradictions, current = detect(self._wall.store, [made], now)
        self._commit(
            "belief.remembered",
            data={
                "derived_from": list(derived_from) if derived_from is not None else None,
                "contradictions": contradictions,
            },
            records=Records(**records),
            now=now,
        )
        return current[made.belief.id]

    @checked_call
    def extract(
        self,
        statement: str,
        *,
        inputs: Sequence[str],
        context: Sequence[str] = (),
        store: str,
        extractor: str | None = None,
    ) -> Belief:
        """Record a fact a memory store's extractor rewrote (mem0 ``infer=True``, Zep's graph):
        the agent-side inference over ``inputs`` (the ids of the messages it was given) and
        ``context`` (the store's existing memories it could read for the same scope).

        Its label is the join of the agent, everything this session has read, every input and
        every context memory: naming inputs can only add taint. It is of kind ``extracted``
        (which a policy's ``extracted`` rule may admit, marked, while its truth stays
        ``unverified``) only when its lineage is clean: every input is a user's attested
        statement, the session has read nothing external or imported, and every context memory
        is a clean user statement or a clean extracted fact. Anything else is recorded exactly
        as :meth:`remember` records the agent's own writing. ``extractor`` names the model that
        rewrote it in the label (default: this session's actor)."""
        self._check_open()
        text = statement_text(statement, self._wall.max_block_bytes)
        if isinstance(inputs, str) or isinstance(context, str):
            raise InputError(
                "inputs and context must be lists of ids, not a single string",
                hint="pass inputs=[belief_id, ...], context=[belief_id, ...]",
            )
        given = [self._context_belief(i) for i in inputs]
        seen = [self._context_belief(i) for i in context]
        labels = [b.origin for b in (*given, *seen)]
        if self._label is not None:
            labels.append(self._label)
        origin = Origin.join(Origin.agent(extractor or self.actor), *labels)
        clean = (
            bool(given)
            and all(user_statement(b) for b in given)
            and all(user_statement(b) or clean_extracted(b) for b in seen)
            and not self.read_untrusted
            and origin.user_lineage
        )
        now = self._wall.clock()
        made = adopt(
            self._ctx,
            kind=ClaimKind.EXTRACTED if clean else ClaimKind.STATEMENT,
            statement=text,
            origin=origin,
            quality=quality_for(origin),
            extraction=ExtractionMethod.LLM,
            source=f"{store}:extractor:session:{self.id}",
            now=now,
            sensitivity=self._floor(_highest(b.sensitivity for b in (*given, *seen))),
        )
        records, contradictions, current = detect(self._wall.store, [made], now)
        self._commit(
            "belief.extracted",
            data={
                "store": store,
                "inputs": list(inputs),
                "context": list(context),
                "clean_lineage": clean,
                "contradictions": contradictions,
            },
            records=Records(**records),
            now=now,
        )
        return current[made.belief.id]

    def _labels_of(self, ids: Sequence[str]) -> list[Origin]:
        if isinstance(ids, str):
            raise InputError(
                "derived_from must be a list of ids, not a single string",
                hint="pass derived_from=[belief_id, ...]",
            )
        labels = []
        for ident in ids:
            if ident.startswith("obs_"):
                labels.append(self._observation(ident).origin)
            else:
                labels.append(self._belief(ident).origin)
        return labels

    # -- corroboration --------------------------------------------------------------------

    @checked_call
    def corroborate(
        self,
        belief_id: str,
        observed: Observed | str,
        *,
        relation: EvidenceRelation = EvidenceRelation.SUPPORTS,
        action_id: str | None = None,
        required: int = 1,
        via: Channel | None = None,
    ) -> Belief:
        """Attach an observation as evidence for a belief; promote it if the gate agrees.

        The evidence's class and origin come from the observation's *content* origin: a trusted
        tool that merely carried external text is external evidence and counts for nothing.
        Two things must be host-attested for evidence to count, either way (supporting or
        contradicting): the observation (it came through a host channel, ``validated`` trust)
        and the *link* between it and this belief. Whoever picks which observation bears on
        which belief decides what it proves, so the link counts only when the host makes it:
        ``via=`` the channel the observation came through (host code, e.g. the harness that
        ran CI for this claim). Without it the link is the agent's own claim, recorded as its
        inference and counted for nothing: an agent cannot cite the user's chat message, or
        any trusted tool output it has seen, as proof of its own note. Evidence produced
        by an action whose decision depended on the belief is refused, whether the caller
        names the action (``action_id``) or not: an observation made after one of its own
        session's actions is linked to those actions. ``required`` (at least 1) raises the
        number of independent corroborations promotion needs; it can never lower it.
        """
        self._check_open()
        if type(required) is not int or required < 1:
            raise InputError(
                f"required must be a whole number of at least 1, got {required!r}",
                hint="the gate needs at least one independent corroboration to promote",
            )
        belief = self._belief(belief_id)
        obs_id = observed.observation.id if isinstance(observed, Observed) else observed
        if not isinstance(obs_id, str):
            raise InputError(f"observed must be an Observed or an id, got {type(obs_id).__name__}")
        observation = self._observation(obs_id)
        linked = via is not None and self._links(via, observation)
        if action_id is not None:
            self._refuse_self_promotion(belief, action_id)
        self._refuse_acted_on(belief, observation)
        witness = observation.origin
        if observation.trust != ObservationTrust.VALIDATED or not linked:
            # Not attested by the host (the observation, or its bearing on this belief): the
            # agent's report, which never counts.
            witness = Origin.join(witness, Origin.agent(self.actor))
        now = self._wall.clock()
        item = EvidenceItem(
            id=new_id("evi"),
            claim_id=belief.claim_id,
            source=observation.id,
            relation=relation,
            quality=quality_for(witness),
            independence_group=independence_group(witness),
            origin=witness,
            observed_at=observation.captured_at,
            action_id=action_id,
        )
        # Promotion, demotion by counted contradicting evidence, and re-detection of
        # contradictions for a newly supported belief: one rule, in firewall.gate.contradictions.
        outcome = detect_on_evidence(self._wall.store, belief, item, now, required=required)
        self._commit(
            "evidence.added",
            data={
                "belief_id": belief.id,
                "evidence_id": item.id,
                "promoted": outcome.promoted,
                "contradictions": outcome.contradictions,
            },
            records=Records(**outcome.records),
            now=now,
        )
        return outcome.belief

    def _links(self, via: object, observation: Observation) -> bool:
        """True when ``via`` is a channel this firewall opened for the session's project and
        ``observation`` came through it (same origin and trust); a forgery is refused."""
        channel = self._wall.attested_by(via, project=self.project)
        if observation.origin != channel.origin or observation.trust != channel.trust:
            raise InputError(
                f"observation {observation.id} did not come through channel {channel.id}",
                hint="pass via= the channel the observation was recorded through",
            )
        return True

    def request_forget(self, belief_id: str, reason: str = "") -> str:
        """Ask the host to erase a belief this session may name: recorded as a request held
        for an operator (an ``erasure.requested`` event), **never executed on the agent's
        word**. The operator lists held requests with ``gnomon forget --requests`` and erases
        with ``gnomon forget --belief ID --key KEY`` (an eraser grant). Returns the request id.
        """
        self._check_open()
        belief = self._belief(belief_id)
        why = statement_text(reason, self._wall.max_block_bytes) if reason else ""
        request_id = new_id("erq")
        self._commit(
            ERASURE_REQUESTED,
            data={"request_id": request_id, "belief_id": belief.id, "reason": why},
        )
        return request_id

    def _belief(self, belief_id: str) -> Belief:
        """A belief this session may name: of its project, and not in a privileged state
        (quarantined, malicious, hidden, blocked, privileged-only beliefs leave only through
        the audit path, so to an agent they are unknown ids, their text never returned)."""
        belief = self._wall.require_belief(belief_id)
        if belief.project != self.project or floor_reasons(belief):
            raise UnknownIdError("belief", belief.id)
        return belief

    def _context_belief(self, belief_id: str) -> Belief:
        """A message or store memory an extractor could read: of this project, in any state
        (only its label and states are used; a quarantined one taints the fact, its text is
        never shown)."""
        belief = self._wall.require_belief(belief_id)
        if belief.project != self.project:
            raise UnknownIdError("belief", belief.id)
        return belief

    def _observation(self, obs_id: str) -> Observation:
        observation = self._wall.store.get_observation(obs_id)
        if observation is None or observation.project != self.project:
            raise UnknownIdError("observation", obs_id)
        return observation

    def _refuse_acted_on(self, belief: Belief, observation: Observation) -> None:
        """Refuse (as self-promotion) an observation captured after an action of its session
        whose decision rested on ``belief``.

        This is the default link between an action and what the agent saw after it: the
        action's own outcome cannot corroborate what it acted on even when nobody says so."""
        if observation.session_id is None:
            return
        depending = {d.id for d in self._wall.store.decisions_depending_on(belief.id)}
        if not depending:
            return
        before = [
            action
            for event in self._wall.store.session_events(observation.session_id)
            for action in event.records().actions
            if action.created_at <= observation.captured_at
        ]
        for action in before:
            if action.decision_id in depending:
                self._refuse_self_promotion(belief, action.id)

    def _refuse_self_promotion(self, belief: Belief, action_id: str) -> None:
        action = self._wall.store.get_action(action_id)
        if action is None:
            raise UnknownIdError("action", action_id)
        for decision in self._wall.store.decisions_depending_on(belief.id):
            # Any action of a decision that rested on this belief is the agent's own success.
            if action.decision_id == decision.id:
                raise SelfPromotionError(
                    f"evidence from action {action_id} cannot promote belief {belief.id}: the "
                    f"action's decision {decision.id} depended on it",
                    hint="corroborate with an observation independent of the agent's own actions",
                )

    # -- recall ---------------------------------------------------------------------------

    @checked_call
    def recall(
        self,
        query: str,
        policy: ContextPolicy | str = "default",
        k: int = 10,
        *,
        grant: Grant | None = None,
    ) -> RecallResult:
        """Policy-filtered recall. Returns accepted, quoted, rejected (with reasons),
        contradictions and uncertainties, and logs what was returned."""
        self._check_open()
        checked_text("query", query, limit=MAX_QUERY_CHARS)
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
        # validated once, digest included (cached): the queries and the log use this one
        chosen, digest = resolve_with_digest(policy)
        if chosen.privileged:
            raise MissingGrantError(
                f"policy {chosen.name!r} is privileged: recall through it is the audit path",
                hint="use Firewall.audit(query, grant=wall.grant('auditor', ...))",
            )
        now = self._wall.clock()
        gathered = collect(
            self._wall.store,
            chosen,
            digest,
            query=query,
            project=self.project,
            user=self.user,
            k=k,
            now=now,
        )
        # lazy freshness decay: what this read rejected on age or expiry, as it read them
        if gathered.aged:
            decay_read(self._wall, gathered.aged)
        # one credential rule on every path: what the drop-in withholds, this recall does too
        shown = withhold_credentials(gathered.result)
        return self._log_recall(shown, chosen.name, digest, k=k, now=now)

    def _log_screened(
        self,
        result: RecallResult,
        chosen: ContextPolicy,
        *,
        k: int,
        now: datetime,
        source: str | None = None,
    ) -> RecallResult:
        """Host side: log a recall result a memory-store adapter screened, and add what it
        showed to the session's label.

        :meth:`recall` logs the store's own recall; a memory-store adapter calls this for the
        hits it screened (``source`` names the store), so every read that reaches the model is
        one ``recall.performed`` event and taints the session the same way. Private: agent code
        that could call it would log a recall that never happened.

        The policy named in the event is ``chosen`` re-validated (cached, with its digest), so
        a subclass or an edited object cannot log another policy's name or digest.
        """
        policy, digest = revalidate_with_digest(chosen)
        return self._log_recall(result, policy.name, digest, k=k, now=now, source=source)

    def _log_recall(
        self,
        result: RecallResult,
        policy: str,
        digest: str,
        *,
        k: int,
        now: datetime,
        source: str | None = None,
    ) -> RecallResult:
        self._check_open()
        data: dict[str, Any] = {
            "query": result.query,
            "k": k,
            "accepted": result.accepted_ids,
            "quoted": result.quoted_ids,
            "rejected": {r.belief_id: list(r.codes) for r in result.rejected},
            "contradictions": [v.contradiction.id for v in result.contradictions],
            "uncertainties": [u.belief_id for u in result.uncertainties],
        }
        seen = result.seen()
        # exactly what reached the model (text, or an uncertain line's subject and origin):
        # the beliefs the session's label joins below
        data["shown"] = [belief_id for belief_id, _, _ in seen]
        if source is not None:
            data["source"] = source
        seq = self._commit(
            "recall.performed",
            data=data,
            versions={"policy": policy, "policy_digest": digest},
            now=now,
        )
        if source is None:  # a guarded store's read is logged by its adapter, with its call
            withheld_read(
                "recall",
                returned=len(result.accepted) + len(result.quoted),
                quoted=len(result.quoted),
                withheld=len(result.rejected),
                reasons=dict(sorted(Counter(c for r in result.rejected for c in r.codes).items())),
            )
        self._read([origin for _, origin, _ in seen], [level for _, _, level in seen])
        # what the model read is what may supply an action's arguments (firewall.kernel.provenance)
        accepted = set(result.accepted_ids)
        for belief in result.shown():
            self._inputs.add(
                belief.statement, _input(belief.origin, belief.id, memory=belief.id in accepted)
            )
        for line in result.uncertainties:  # an "Uncertain" line shows its subject
            if line.subject:
                self._inputs.add(line.subject, _input(line.origin, line.belief_id))
        return replace(result, event_seq=seq)

    # -- decisions and actions ------------------------------------------------------------

    @checked_call
    def decide(
        self,
        summary: str,
        depends_on: Sequence[str],
        *,
        policy: ContextPolicy | str = "default",
    ) -> Decision:
        """Record a decision citing the beliefs it rests on.

        A decision is always recorded, because the audit must show what the agent did; each
        dependency that is not supported is flagged, and when the policy does not allow such
        dependencies the decision carries a policy flag too (the trust report surfaces both)."""
        self._check_open()
        chosen = resolve(policy)
        if isinstance(depends_on, str):
            raise InputError("depends_on must be a list of belief ids")
        if chosen.decisions.require_citations and not depends_on:
            raise InputError(
                f"policy {chosen.name!r} requires decisions to cite the beliefs they depend on",
                hint="pass depends_on=[belief ids from the recall you acted on]",
            )
        found = self._wall.store.get_beliefs(list(depends_on))
        for ident in depends_on:
            # the read floor: a quarantined, malicious, hidden or blocked belief is the audit
            # path's only, so here it is "unknown" like another project's or a made-up id
            # (its truth state is not reported)
            if (
                ident not in found
                or found[ident].project != self.project
                or floor_reasons(found[ident])
            ):
                raise UnknownIdError("belief", ident)
        truth = {i: found[i].truth_status for i in depends_on}
        flags = [
            f"dependency {i} is {t.value}" for i, t in truth.items() if t != TruthStatus.SUPPORTED
        ]
        if flags and not chosen.decisions.allow_unverified_dependencies:
            flags.append(f"policy {chosen.name!r} does not allow unsupported dependencies")
        now = self._wall.clock()
        decision = Decision(
            id=new_id("dec"),
            session_id=self.id,
            summary=statement_text(summary),
            depends_on=list(depends_on),
            dependency_truth=truth,
            policy_id=chosen.name,
            created_at=now,
            flags=flags,
        )
        self._commit(
            "decision.recorded",
            data={"decision_id": decision.id, "flags": flags},
            records=Records(decisions=(decision,)),
            versions={"policy": chosen.name, "policy_digest": chosen.digest},
            now=now,
        )
        return decision

    @checked_call
    def act(self, decision_id: str, name: str, args: Mapping[str, Any] | None = None) -> Action:
        now = self._following("decision", self._wall.store.get_decision, decision_id)
        action = Action(
            id=new_id("act"),
            decision_id=decision_id,
            session_id=self.id,
            name=checked_name("action name", name),
            args=checked_args(args),
            created_at=now,
        )
        self._commit("action.taken", records=Records(actions=(action,)), now=now)
        return action

    @checked_call
    def record_outcome(self, action_id: str, *, success: bool, summary: str = "") -> Outcome:
        checked_text("summary", summary, limit=MAX_SUMMARY_CHARS)
        now = self._following("action", self._wall.store.get_action, action_id)
        outcome = Outcome(
            id=new_id("out"),
            action_id=action_id,
            session_id=self.id,
            success=bool(success),
            summary=summary,
            created_at=now,
        )
        self._commit("outcome.recorded", records=Records(outcomes=(outcome,)), now=now)
        return outcome


__all__ = ["Observed", "Session", "ToolCall"]
