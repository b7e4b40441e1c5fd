"""The Letta agent loop behind the firewall: ``client.agents.messages.create``.

A Letta agent runs server-side: the server compiles the agent's attached core-memory blocks
into its system prompt, runs the model, and lets the agent edit its own blocks with its memory
tools. The guarded step does four things around the SDK call:

1. **Inputs are labelled by role** (as mem0's ``add`` and Zep's thread messages are): a
   role=user message (and ``input=``, Letta's shorthand for one) is the user's when the host
   configured its user channel (``user_channel=``), else only the caller's claim, i.e. the
   agent's; ``assistant``/``system`` messages are the agent's; tool returns are external.
   ``gnomon_origin=`` (host code) labels them all.
2. **Blocks that fail the policy never reach the prompt.** Before the step, the agent's blocks
   are read and screened; every block the policy does not *accept* (quoted ones included: the
   server compiles blocks verbatim, with no room for a "quoted, untrusted" label) is
   **detached** from the agent for the step and re-attached after it, whether the step
   succeeded or failed. Detaching keeps the block's text and binding intact (nothing is
   rewritten, nothing lost) and keeps the agent working with its other blocks; the poisoned
   text is not in the compiled prompt of that step. If re-attaching fails, the block stays
   detached: the error is raised, and the poisoned text still never reaches a prompt.
3. **What the step read** (tool returns in the response) is recorded as external content, so
   the session's label, and every memory the agent writes after it, carries it.
4. **The agent's own edits are reconciled** after the step: each block whose value the server
   changed is recorded as an agent-authored revision (the agent joined with everything the
   session has read, as :meth:`Session.remember` labels it) superseding the bound belief; a
   block the agent created is bound as the agent's; a block it emptied is a delete. An edit
   that would retire a supported memory of higher integrity (the user's fact, rewritten by the
   agent) is not accepted: it is recorded as a candidate contradicting the user's belief, and
   the trusted value is written back to the block.

The response is the SDK's ``LettaResponse`` with ``gnomon``: what was withheld from the step
(counts and reason codes, never text) and how many edits were revised or written back.
Streaming steps (``streaming=True``) are refused: their text would reach the caller before the
step could be reconciled.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gnomon.adapters.base import StoreItem, rendered_value
from gnomon.adapters.conflicts import bound_to
from gnomon.adapters.core import WRITE, Args, Call, Flow, Resource, guarded
from gnomon.adapters.errors import (
    AdapterError,
    BypassRefusedError,
    ProtectedBeliefError,
    StoreCallError,
    sdk_imports,
)
from gnomon.adapters.guard import Guard, Screened
from gnomon.adapters.letta_backend import STORE, block_item, converted, listed
from gnomon.adapters.withheld import Summary, report
from gnomon.firewall.model.chain import BindingState

with sdk_imports("letta", "letta-client"):
    from letta_client.resources.agents import messages as sdk_messages


def step_inputs(a: Args) -> tuple[list[tuple[Any, Any, str]], list[Any] | None]:
    """``(role, name, text)`` of every input of a step, and ``messages`` as a list (an
    iterable the SDK would consume is read once, then sent as that list)."""
    out: list[tuple[Any, Any, str]] = []
    given = a.get("input")
    if isinstance(given, str):
        out.append(("user", None, given))
    elif given is not None:
        out.extend(("user", None, _text(part)) for part in _listed(given, a.name))
    messages = a.get("messages")
    sent = None if messages is None else _listed(messages, a.name)
    for message in sent or []:
        if not isinstance(message, dict):
            raise StoreCallError(
                f"each message must be a dict, got {type(message).__name__}",
                store=STORE,
                call=a.name,
                hint="pass {'role': 'user', 'content': '...'}",
            )
        role = message.get("role", "tool")  # approvals and tool returns carry no role
        out.append((role, message.get("name"), _text(message.get("content", message))))
    return [(r, n, t) for r, n, t in out if t.strip()], sent


def _listed(values: Any, call: str) -> list[Any]:
    if isinstance(values, str | bytes | dict) or not isinstance(values, Iterable):
        raise StoreCallError(
            f"expected a list, got {type(values).__name__}", store=STORE, call=call
        )
    return list(values)


def _text(content: Any) -> str:
    """String content as is; a part's ``text``; anything else as canonical JSON (so nothing the
    model will read escapes the record)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return rendered_value(content)


class LoopCore:
    """The agent-step side of the Letta client's firewall core (mixed into its ``_Core``)."""

    guard: Guard

    def label_inputs(self, a: Args) -> list[Any] | None:
        inputs, sent = step_inputs(a)
        for role, name, text in inputs:
            origin = a.origin if a.origin is not None else self.guard.message_origin(role, name)
            self.guard.record(text, origin=origin)
        return sent

    def item(self, block: Any, agent: str, call: str) -> StoreItem:
        return block_item(block, call, {"agent_id": agent, "label": block.label})

    def held(self, blocks: list[Any], agent: str, call: str) -> tuple[list[Screened], Any]:
        """The agent's blocks the policy does not accept (to detach: quoted ones too, the
        server compiles blocks verbatim), and the step's report, counting them as withheld."""
        items = [self.item(b, agent, call) for b in blocks]
        hits = self.guard.screen(items, query=f"{call} {agent}", k=max(1, len(items)), call=call)
        shown = report(hits, policy=hits.summary.get("policy"), quotes_shown=False)
        summary = Summary({**hits.summary, **shown})
        return [s for s in hits if s.verdict != "accepted"], summary

    def read_step(self, response: Any, call: str) -> None:
        """Tool returns the agent read during the step: external content, into the session."""
        for message in getattr(response, "messages", None) or []:
            text = getattr(message, "tool_return", None)
            if getattr(message, "message_type", None) == "tool_return_message" and text:
                name = getattr(message, "name", None)
                self.guard.record(str(text), origin=self.guard.message_origin("tool", name))

    def reconcile(self, blocks: list[Any], agent: str, call: str) -> list[StoreItem]:
        """Record the step's block edits as the agent's revisions; return the blocks whose
        edit was refused (a supported memory of higher integrity): their value is restored."""
        items = [self.item(b, agent, call) for b in blocks]
        store = self.guard.wall.store
        bindings = store.bindings_by_store_id(STORE, [i.store_id for i in items])
        restore = []
        for item in items:
            binding = bindings.get(item.store_id)
            if binding is None:
                if item.text.strip():  # a block the agent created during the step
                    belief = self.guard.record(item.text)
                    pending = self.guard.bind_pending(
                        belief, item.text, {}, store_id=item.store_id, rendered=item.rendered
                    )
                    self.guard.confirm_write(pending, item.store_id, stored=item)
                continue
            if binding.state != BindingState.WRITTEN or item.content_hash == binding.content_hash:
                continue
            try:
                if not item.text.strip():
                    self.guard.begin_delete(item.store_id, call=call)
                    continue
                pending, _ = self.guard.begin_update(
                    item.store_id, item.text, {}, rendered=item.rendered, call=call
                )
            except ProtectedBeliefError:
                old = store.get_belief(binding.belief_id)
                if old is not None:
                    restore.append(StoreItem(item.store_id, old.statement, scope=item.scope))
                continue
            self.guard.confirm_write(pending, item.store_id, stored=item)
        return restore


class AgentMessages(Resource):
    """``client.agents.messages``: ``create`` is one guarded agent step (module docstring)."""

    _store = STORE
    _path = "agents.messages."
    _SDK = (sdk_messages.MessagesResource, sdk_messages.AsyncMessagesResource)
    _converted = staticmethod(converted)
    #: The raw ``agents.blocks`` resource, to detach, re-attach and re-read blocks.
    _blocks: Any = None

    def _read_blocks(self, name: str, agent: str) -> Call:
        return Call(name, lambda: self._blocks.list(agent, limit=1000)).then(
            lambda page: listed(page, name)
        )

    def _attach(self, verb: str, name: str, agent: str, block_ids: list[str]) -> Flow[None]:
        for block_id in block_ids:
            method = getattr(self._blocks, verb)
            yield Call(name, lambda b=block_id, m=method: m(b, agent_id=agent))

    @guarded(extras=WRITE)
    def create(self, a: Args) -> Flow:
        """One agent step, guarded (see :mod:`adapters.letta_loop`)."""
        if a.get("streaming") or a.get("stream_tokens"):
            raise BypassRefusedError(
                "a streamed step reaches the caller before the firewall can reconcile it",
                store=STORE,
                call=a.name,
                hint="call agents.messages.create without streaming",
            )
        agent, core = a["agent_id"], self._core
        sent = core.label_inputs(a)
        held, summary = core.held((yield self._read_blocks(a.name, agent)), agent, a.name)
        detached: list[str] = []
        try:
            for screened in held:
                yield from self._attach("detach", a.name, agent, [screened.item.store_id])
                detached.append(screened.item.store_id)
            response = yield (a.raw() if sent is None else a.raw(messages=sent))
        except AdapterError:
            yield from self._attach("attach", a.name, agent, detached)
            raise
        yield from self._attach("attach", a.name, agent, detached)
        core.read_step(response, a.name)
        after = yield self._read_blocks(a.name, agent)
        restore = core.reconcile(after, agent, a.name)
        for item in restore:
            label = item.scope["label"]
            yield Call(
                a.name,
                lambda i=item, la=label: self._blocks.update(la, agent_id=agent, value=i.text),
            )
        report = Summary(
            {
                **summary,
                "detached": len(detached),
                "written_back": len(restore),
                # the step's own conflicts (an edit of the user's block) are in the channel
                "contradictions": core.guard.contradictions(
                    bound_to(core.guard, [core.item(b, agent, a.name).store_id for b in after])
                ),
            }
        )
        return response.model_copy(update={"gnomon": report})


__all__ = ["AgentMessages", "LoopCore", "step_inputs"]
