"""Letta behind the firewall: :class:`GuardedLetta` and :class:`GuardedAsyncLetta`.

One line to adopt::

    client = GuardedLetta(Letta(api_key=...), wall, session=session, user_channel=alice)

The guarded client keeps ``letta-client``'s resource layout, method names, signatures and return
types for the memory surface, and refuses every other SDK method
(:class:`~adapters.errors.BypassRefusedError`):

* ``client.agents.blocks.retrieve / update / list`` (core memory, by agent and label);
* ``client.blocks.create / retrieve / update / delete / list`` (standalone blocks);
* ``client.agents.passages.create / list / search / delete`` (an agent's archival memory);
* ``client.archives.create`` and ``client.archives.passages.create / delete`` (shared archives);
* ``client.passages.search``;
* ``client.agents.messages.create`` (one agent step, see :mod:`adapters.letta_loop`).

Every wrapper method takes the installed SDK's signature (``inspect.signature`` of the
``letta-client`` method, plus ``gnomon_origin=`` on writes) and is written once as a flow
(:mod:`adapters.core`): ``GuardedAsyncLetta`` awaits the same flows and runs their firewall
steps off the event loop.

**Blocks.** A block is one text value per label, so a block maps to *one belief per version*:
its value is the belief's statement, and every value written through the firewall
(``blocks.update(value=...)``, ``agents.blocks.update(label, value=...)``) is a revision: a new
agent-authored belief supersedes the previous one and the binding follows the block id. An agent
editing its own block is exactly such a write, so it inherits its session's label (everything
the session has read), as :meth:`Session.remember` does. A retrieved block whose belief fails
the ContextPolicy is returned *redacted*, not raised: the same ``BlockResponse`` with an empty
``value``, no ``description`` or ``metadata``, and ``gnomon = {"withheld": True, "belief_id",
"reasons"}`` (an agent loop that renders core memory keeps working and never sees the text).
Blocks in lists are dropped when they fail. A block's binding hash covers its label,
description, metadata, tags and template name as well as its value (they reach the caller with
it), so editing any of them around the firewall is drift; an update without ``value=`` (those
fields alone) is a revision of the value the firewall recorded, like any other.
An update or delete from a write of lower integrity than a supported block
or passage (the agent after reading a web page, against the user's fact) is refused
(:class:`~adapters.errors.ProtectedBeliefError`), recorded as a contradicting candidate; the host
revises the user's memory with ``gnomon_origin=``. Blocks that existed before the firewall (a
persona
written at agent creation) are unknown external content until imported and promoted.

**Passages.** Agent archival passages carry *tags only* (``agents.passages.create`` has no
metadata), so the belief id travels as the tag ``gnomon:<belief_id>``; archive passages carry
the firewall's metadata keys. A passage's store id is ``"<agent or archive id>/<passage id>"``
because Letta can only address a passage through its container. The tag or metadata is only a
hint: the firewall trusts its own bindings, never what the store says about itself. A passage's
tags and metadata reach the caller with its text, so its binding's hash covers them (an edit
around the firewall is drift), and ``create`` answers with the passage screened as a read.

**Reads.** Hits that pass carry ``gnomon`` (their labels) as an extra attribute; the others are
removed from lists and searches (``count`` adjusted). Lists are read to the end, screened, and
returned as a single page that never fetches more (so an excluded item cannot leak through
auto-pagination).

**Failures.** Every SDK error becomes a typed error naming ``letta`` and the call: HTTP 401/404/
429/5xx → :class:`~adapters.errors.StoreCallError` (with ``status``), timeouts →
:class:`~adapters.errors.StoreTimeoutError`, a response not in the documented shape →
:class:`~adapters.errors.StoreResponseError`. A write the store fails after the firewall has
recorded it leaves the binding ``failed`` and the belief hidden.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gnomon.adapters.errors import sdk_imports

with sdk_imports("letta", "letta-client"):
    from letta_client import AsyncLetta, Letta
    from letta_client.resources import passages as sdk_passages
    from letta_client.resources.agents import agents as sdk_agents
    from letta_client.resources.agents import blocks as sdk_agent_blocks
    from letta_client.resources.agents import passages as sdk_agent_passages
    from letta_client.resources.archives import archives as sdk_archives
    from letta_client.resources.archives import passages as sdk_archive_passages
    from letta_client.resources.blocks import blocks as sdk_blocks

from gnomon.adapters import core
from gnomon.adapters.base import GNOMON_KEYS, StoreItem, rendered_value
from gnomon.adapters.errors import StoreCallError
from gnomon.adapters.guard import fetch_size
from gnomon.adapters.letta_backend import (
    BLOCK_FIELDS,
    STORE,
    TAG_PREFIX,
    LettaBackend,
    ScreenedAsyncList,
    _malformed,
    belief_tag,
    block_item,
    converted,
    listed,
    passage_item,
    passage_store_id,
    screened_page,
    search_result_item,
)
from gnomon.adapters.letta_loop import AgentMessages, LoopCore
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.content import MAX_QUERY_CHARS, checked_text

#: The ``top_k`` an agent's passage search returns when the caller names none (the server's
#: default): the guarded search asks for :func:`fetch_size` of it and shows this many.
SEARCH_TOP_K = 10
#: ``passages.search``' ``limit`` when the caller gives none (the server's default): the
#: guarded search asks for :func:`fetch_size` of it and shows at most this many.
PASSAGES_SEARCH_LIMIT = 50


class _Core(core.Core, LoopCore):
    """The firewall side shared by the sync and async resources."""

    def one_block(self, item: StoreItem, query: str) -> Any:
        """A block read: annotated, or redacted (same shape, no text) when it fails."""
        return self.one(item, query)

    def update_block(
        self, a: core.Args, current: core.Call, scope: dict[str, str] | None
    ) -> core.Flow:
        """A new value is a revision, authored by the agent (inheriting its session's label)
        unless the host names ``gnomon_origin=``. So is an update without ``value=`` (the label,
        description or metadata alone, which the binding's hash covers): the block's value as
        the firewall recorded it is written anew under the new fields, derived from the belief
        it revises (a lower-integrity writer is refused on a supported block, and a block never
        trusted stays so); a block whose value the firewall cannot vouch for is refused."""
        checked = self.checked(a.name, a.get("metadata"))
        found = block_item((yield current), a.name, scope)
        value, derived = a.get("value"), None
        if value is None:
            value, derived = self._recorded(found, a.name)
        # an agent's block is addressed by its label: the answer's must be that one
        addressed = {"label": rendered_value(scope["label"])} if scope and "label" in scope else {}
        pending, _ = self.guard.begin_update(
            found.store_id,
            value,
            checked,
            origin=a.origin,
            derived_from=derived,
            rendered={**self.guard.held(found), **addressed, **a.sent(*BLOCK_FIELDS)},
            call=a.name,
        )
        _, item = yield from self.write(
            pending,
            a.raw(value=pending.text, metadata=pending.metadata),
            lambda block: block_item(block, a.name, scope),
            stored=True,
        )
        return self.one_block(item, a.name)

    def _recorded(self, found: StoreItem, call: str) -> tuple[str, list[str]]:
        """The value of a block as its verified binding recorded it, and the belief it is."""
        resolved = self.guard.resolve_items([found])
        if not resolved or resolved[0][0].state != BindingState.WRITTEN:
            raise StoreCallError(
                f"block {found.store_id} does not hold a value the firewall recorded",
                store=STORE,
                call=call,
                hint="pass value= to write the block anew",
            )
        return found.text, [resolved[0][1].id]


class _Refusing(core.Resource):
    _store = STORE
    _converted = staticmethod(converted)


def _paged(**options: Any) -> core.guarded:
    """A ``list``: one screened page (sync), or awaitable and async-iterable (async)."""
    return core.guarded(sync=screened_page, lazy=ScreenedAsyncList, **options)


class AgentBlocks(_Refusing):
    _path = "agents.blocks."
    _SDK = core.sdk_pair(sdk_agent_blocks, "BlocksResource")

    @core.guarded
    def retrieve(self, a: core.Args) -> core.Flow:
        block = yield a.raw()
        agent, label = a["agent_id"], a["block_label"]
        item = block_item(block, a.name, {"agent_id": agent, "label": label})
        return self._core.one_block(item, f"{a.name} {agent}/{label}")

    @core.guarded(extras=core.WRITE)
    def update(self, a: core.Args) -> core.Flow:
        """A new value is a revision, authored by the agent (inheriting its session's label)."""
        agent, label = a["agent_id"], a["block_label"]
        current = core.Call(a.name, lambda: self._raw.retrieve(label, agent_id=agent))
        scope = {"agent_id": agent, "label": label}
        return (yield from self._core.update_block(a, current, scope))

    @_paged()
    def list(self, a: core.Args) -> core.Flow:
        blocks = yield a.raw().then(lambda page: listed(page, a.name))
        items = [block_item(b, a.name, {"agent_id": a["agent_id"]}) for b in blocks]
        return self._core.passed(items, a.name)


class AgentPassages(_Refusing):
    _path = "agents.passages."
    _SDK = core.sdk_pair(sdk_agent_passages, "PassagesResource")

    @core.guarded(extras=core.WRITE)
    def create(self, a: core.Args) -> core.Flow:
        agent, tags = a["agent_id"], a.get("tags") or []
        pending = self._core.begin(a.name, a["text"], None, a.origin)
        mine = [*(t for t in tags if not t.startswith(TAG_PREFIX)), belief_tag(pending.belief.id)]
        pending = replace(pending, rendered={"tags": rendered_value(mine)})

        def parse(made: Any) -> StoreItem:
            if not isinstance(made, list) or len(made) != 1:
                raise _malformed(a.name, "a list of one passage", made)
            return passage_item(made[0], agent, a.name)

        sent = a.raw(text=pending.text, tags=mine)
        _, item = yield from self._core.write(pending, sent, parse, stored=True)
        return [self._core.one(item, a.name)]  # the store's answer, screened as a read

    @core.guarded
    def list(self, a: core.Args) -> core.Flow:
        found = yield a.raw()
        if not isinstance(found, list):
            raise _malformed(a.name, "a list of passages", found)
        items = [passage_item(p, a["agent_id"], a.name) for p in found]
        return self._core.passed(items, f"{a.name} {a.get('search') or ''}".strip())

    @core.guarded
    def search(self, a: core.Args) -> core.Flow:
        checked_text("query", a["query"], limit=MAX_QUERY_CHARS)  # logged with the recall
        top_k = a.get("top_k")
        k = top_k if isinstance(top_k, int) and top_k > 0 else SEARCH_TOP_K
        found = yield a.raw(top_k=fetch_size(k))  # over-fetched, ranked trusted first
        results = getattr(found, "results", None)
        if not isinstance(results, list):
            raise _malformed(a.name, "a search response with results", found)
        items = [search_result_item(r, a["agent_id"], a.name) for r in results]
        kept = self._core.passed(items, a["query"], limit=k)
        return found.model_copy(update={"results": kept, "count": len(kept), "gnomon": kept.gnomon})

    delete = core.deleting(lambda a: passage_store_id(a["agent_id"], a["memory_id"]))


class Agents(_Refusing):
    _path = "agents."
    _SDK = core.sdk_pair(sdk_agents, "AgentsResource")
    _children = core.children(AgentBlocks, AgentPassages, AgentMessages)

    def __init__(self, core: _Core, raw: Any) -> None:
        super().__init__(core, raw)
        self.messages._blocks = raw.blocks  # a step detaches, re-attaches and re-reads blocks


class Blocks(_Refusing):
    _path = "blocks."
    _SDK = core.sdk_pair(sdk_blocks, "BlocksResource")

    @core.guarded(extras=core.WRITE)
    def create(self, a: core.Args) -> core.Flow:
        sent = a.sent(*BLOCK_FIELDS)
        pending = self._core.begin(a.name, a["value"], a.get("metadata"), a.origin, sent)
        _, item = yield from self._core.write(
            pending,
            a.raw(value=pending.text, metadata=pending.metadata),
            lambda block: block_item(block, a.name),
            stored=True,
        )
        return self._core.one_block(item, a.name)

    @core.guarded
    def retrieve(self, a: core.Args) -> core.Flow:
        block = yield a.raw()
        return self._core.one_block(block_item(block, a.name), f"{a.name} {a['block_id']}")

    @core.guarded(extras=core.WRITE)
    def update(self, a: core.Args) -> core.Flow:
        current = core.Call(a.name, lambda: self._raw.retrieve(a["block_id"]))
        return (yield from self._core.update_block(a, current, None))

    delete = core.deleting(lambda a: a["block_id"])

    @_paged()
    def list(self, a: core.Args) -> core.Flow:
        blocks = yield a.raw().then(lambda page: listed(page, a.name))
        items = [block_item(b, a.name) for b in blocks]
        return self._core.passed(items, f"{a.name} {a.get('value_search') or ''}")


class ArchivePassages(_Refusing):
    _path = "archives.passages."
    _SDK = core.sdk_pair(sdk_archive_passages, "PassagesResource")

    @core.guarded(extras=core.WRITE)
    def create(self, a: core.Args) -> core.Flow:
        archive = a["archive_id"]
        pending = self._core.begin(a.name, a["text"], a.get("metadata"), a.origin, a.sent("tags"))
        _, item = yield from self._core.write(
            pending,
            a.raw(text=pending.text, metadata=pending.metadata),
            lambda made: passage_item(made, archive, a.name),
            stored=True,
        )
        return self._core.one(item, a.name)  # the store's answer, screened as a read

    delete = core.deleting(lambda a: passage_store_id(a["archive_id"], a["passage_id"]))


class Archives(_Refusing):
    _path = "archives."
    _SDK = core.sdk_pair(sdk_archives, "ArchivesResource")
    _children = core.children(ArchivePassages)

    #: An empty container: nothing to record until passages are written into it.
    create = core.guarded()


def _search_hit_items(hits: Any, call: str, agent_id: Any) -> list[StoreItem]:
    if not isinstance(hits, list):
        raise _malformed(call, "a list of search results", hits)
    items = []
    for hit in hits:
        passage = getattr(hit, "passage", None)
        container = agent_id if isinstance(agent_id, str) else getattr(passage, "archive_id", None)
        if not isinstance(container, str):
            raise _malformed(call, "a passage with an archive_id", hit)
        item = passage_item(passage, container, call)
        items.append(replace(item, raw=hit, text_field="passage.text"))
    return items


class Passages(_Refusing):
    _path = "passages."
    _SDK = core.sdk_pair(sdk_passages, "PassagesResource")

    @core.guarded
    def search(self, a: core.Args) -> core.Flow:
        limit = a.get("limit")
        k = limit if isinstance(limit, int) and limit > 0 else PASSAGES_SEARCH_LIMIT
        hits = yield a.raw(limit=fetch_size(k))  # over-fetched, ranked trusted first
        items = _search_hit_items(hits, a.name, a.get("agent_id"))
        return self._core.passed(items, str(a.get("query") or ""), limit=k)


class GuardedLetta(core.GuardedClient):
    """A ``letta_client.Letta`` behind the firewall (see the module docstring).

    ``gnomon_origin=`` on a write (host code only) records it with an explicit origin, e.g.
    the host's channel for a block the user dictated; without it a write is the agent's.
    ``user_channel=`` (the host's channel for its user) labels role=user messages of an agent
    step as the user's. ``client.gnomon`` is the store-independent
    :class:`~adapters.adapter.Adapter` (audit, import, export, sync).
    """

    _store = STORE
    _SDK = (Letta, AsyncLetta)
    _Core = _Core
    _children = core.children(Agents, Blocks, Archives, Passages)

    def _backend(self, client: Letta) -> LettaBackend:
        return LettaBackend(client)

    def _sync_twin(self, client: AsyncLetta) -> Letta:
        """The contract backend (audit, import, export, sync) needs a sync client: one sharing
        the async client's configuration."""
        return Letta(
            api_key=client.api_key,
            base_url=client.base_url,
            max_retries=client.max_retries,
            timeout=client.timeout,
            default_headers=dict(client._custom_headers),
        )


class GuardedAsyncLetta(GuardedLetta):
    """A ``letta_client.AsyncLetta`` behind the firewall: :class:`GuardedLetta`'s flows with the
    SDK's coroutines (``await client.blocks.create(...)``; ``list`` is awaitable and
    async-iterable like the SDK's paginator; ``await client.close()``). The firewall steps run
    on the guard's worker thread, never on the event loop."""

    _ASYNC = True


__all__ = [
    "GNOMON_KEYS",
    "GuardedAsyncLetta",
    "GuardedLetta",
    "LettaBackend",
    "belief_tag",
]
