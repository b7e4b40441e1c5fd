"""Zep Cloud behind the firewall: :class:`GuardedZep` and :class:`GuardedAsyncZep` (zep-cloud 4.x).

One line to adopt::

    zep = GuardedZep(Zep(api_key=...), wall, project="shop", actor="coder", user="alice")

Guarded (same names, signatures and return types as ``zep_cloud``); every other SDK method is
refused (:class:`~adapters.errors.BypassRefusedError`):

* ``zep.thread.add_messages / list_messages / get_context`` (plus ``create``/``get``, which
  carry no memory text);
* ``zep.graph.episode.add / get / list / delete``;
* ``zep.graph.search_edges / search_nodes / search_episodes`` (one page: the first of
  :func:`~adapters.guard.fetch_size` hits, ``page_size`` of them shown, trusted first) and
  ``zep.graph.get_context``;
* ``zep.user.create / get / lookup`` (containers: a user's ``metadata`` is not returned, a
  name or email holding a credential or markup is blanked).

**Writes.** Each message or episode is recorded with its origin (the agent's, joined with what
its session has read, unless the host passes ``gnomon_origin=``), then written with the
firewall's four metadata keys. Zep allows at most 10 scalar metadata keys, so a caller may pass
six; more, or a nested value, is refused *before* anything is recorded
(:class:`~adapters.errors.StoreMetadataError`). Store ids are ``"<graph uuid>/<uuid>"``: Zep
addresses an episode through its graph, and a thread's messages are ingested into the user's
graph as episodes with the message's uuid (where they are not, facts derived from them simply
count as unknown external content: fail closed). The answers (the episode added, the messages
stored) are screened as a read, never returned as the server sent them; a message's or
episode's speaker, metadata and source description are covered by its binding's hash.

**Extracted facts.** Zep's LLM turns episodes into edges (facts) and nodes (entities). They are
at most *derived*: a fact carries the extractor's label (``agent:zep:graphiti``) joined with its
source episodes' labels (never user-attested because the store names a user episode as its
source), so it is unverified until corroborated. A fact whose every source episode is a user's
clean statement, first read by a session that has read nothing external, is recorded as an
*extracted* fact (:meth:`Session.extract`): a policy's ``extracted`` rule (on in the drop-in
default, ``assistant``) admits it into ``<FACTS>``, marked, its truth still ``unverified``.
The hash bound to an edge covers its ``fact``,
``name``, validity dates and attributes. A fact carries the *join* of its source episodes' labels,
traced through ``episode_uuids``: the lowest
integrity and the union of origins, so a fact that any poisoned episode contributed to is
untrusted (summarization laundering, closed). A source episode the firewall does not know counts
as external. The first read of an edge or node records it as a belief with that joined origin,
bound under ``"<graph>/edge:<uuid>@<sources>"``: when Zep merges another episode into the fact,
the source set changes and the fact is labelled afresh. A fact whose source belief is quarantined
or malicious is dropped whatever its own label.

**Context strings.** ``thread.get_context`` and ``graph.get_context`` return one blob built
server-side from everything relevant. The guarded client never returns it: it asks
``graph.get_context(include_results=True)`` (for a thread: on the thread's graph, queried with
its last messages), screens every edge, node and episode, and rebuilds the blob from the items
that passed with Zep's default template (:func:`adapters.zep_context.render_context`). Nothing
excluded reaches the string: FACTS and ENTITIES hold accepted items only, and items the policy
quotes are rendered apart in a labelled ``<QUOTED>`` section with their origin.
``return_context=True`` on ``add_messages`` gets the same rebuild.

**Failures.** HTTP 401/404/429/5xx become :class:`~adapters.errors.StoreCallError` (``status``
set), timeouts :class:`~adapters.errors.StoreTimeoutError`, a response not in the documented
shape :class:`~adapters.errors.StoreResponseError`, each naming ``zep`` and the call. A write the
store fails after the firewall recorded it leaves the binding ``failed`` and the belief hidden.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from gnomon.adapters.errors import sdk_imports

with sdk_imports("zep", "zep-cloud"):
    import pydantic
    from zep_cloud import AddMessage
    from zep_cloud.client import AsyncZep, Zep
    from zep_cloud.core.api_error import ApiError
    from zep_cloud.core.pagination import AsyncPager, SyncPager
    from zep_cloud.core.parse_error import ParsingError
    from zep_cloud.graph import client as sdk_graph
    from zep_cloud.graph.episode import client as sdk_episode
    from zep_cloud.thread import client as sdk_thread
    from zep_cloud.types import (
        ContextResults,
        Episode,
        GraphContextResponse,
        ThreadContextResponse,
    )
    from zep_cloud.user import client as sdk_user

from gnomon.adapters import core
from gnomon.adapters.base import (
    MetadataLimits,
    Page,
    StoreBackend,
    StoreItem,
    earlier,
    merged_metadata,
    rendered_value,
)
from gnomon.adapters.errors import StoreCallError
from gnomon.adapters.fern_errors import FernEdge
from gnomon.adapters.guard import Hits, PendingWrite, fetch_size
from gnomon.adapters.withheld import Summary, attach
from gnomon.adapters.zep_context import render_context
from gnomon.firewall.gate.adoption import user_statement
from gnomon.firewall.host.channels import WriteOrigin
from gnomon.firewall.host.tool_calls import ToolCall
from gnomon.firewall.model.chain import Belief, BindingState
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import SecurityStatus

STORE = "zep"
#: Zep: at most 10 metadata keys, scalar values or lists of scalars.
LIMITS = MetadataLimits(max_keys=10, nested=False)
CONTEXT_MESSAGES = 4
#: A graph search's ``page_size`` when the caller gives none (Zep's own default): the guarded
#: search asks for :func:`~adapters.guard.fetch_size` of it and shows at most this many.
SEARCH_PAGE_SIZE = 10
#: A user's free-form fields: the store's text, with no label or binding (never returned).
USER_FREE_TEXT = ("metadata",)
T = TypeVar("T")
_TAINTED = (SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS)


# -- errors ----------------------------------------------------------------------------------


#: Turns the SDK's (and httpx's) exceptions into adapter errors naming ``{STORE}.<call>``.
EDGE = FernEdge(
    STORE,
    api_error=ApiError,
    response_errors=(ParsingError, pydantic.ValidationError),
    reach_hint="check base_url and the network",
)


# -- SDK objects -> store items --------------------------------------------------------------


def store_id(graph: str, uuid: str) -> str:
    return f"{graph}/{uuid}"


def split_store_id(ident: str) -> tuple[str, str]:
    graph, _, rest = ident.partition("/")
    return graph, rest


def _graph_of(obj: Any, fallback: str) -> str:
    graph = getattr(obj, "graph_uuid", None)
    return graph if isinstance(graph, str) and graph else fallback


def content_item(obj: Any, graph: str, call: str) -> StoreItem:
    """An episode or a message (both: ``uuid_``, ``content``, ``metadata``)."""
    uuid, text = getattr(obj, "uuid_", None), getattr(obj, "content", None)
    if not isinstance(uuid, str) or not uuid or not isinstance(text, str):
        raise EDGE.malformed(call, "an item with a uuid and content", obj)
    metadata = getattr(obj, "metadata", None)
    rendered = speaker_fields(obj)
    return StoreItem(
        store_id=store_id(_graph_of(obj, graph), uuid),
        text=text,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        scope={"graph_uuid": _graph_of(obj, graph)},
        raw=core.settled(obj, SERVER_SET) if isinstance(obj, Episode) else obj,
        rendered=rendered,
        text_field="content",
        earlier_hashes=earlier(text, rendered, (), SPEAKER_FIELDS),
    )


#: An episode's fields the server sets and changes on its own (no binding can cover them):
#: returned settled (:func:`adapters.core.settled`: an enum's declared values, numbers, flags).
SERVER_SET = ("source", "content_policy")

#: What the hash of a message or episode covered before its source description was rendered.
SPEAKER_FIELDS = ("role", "name", "metadata")


def speaker_fields(obj: Any) -> dict[str, str]:
    """Who said a message or episode, its metadata and (an episode's) source description, as
    rendered fields: the binding's hash covers them, so a store edit of any is drift. A message
    and the episode Zep ingests it as share a store id, so both render the same three fields (a
    message's ``name`` is its episode's ``role_name``); a message has no source description,
    so one is rendered only where an episode has one (an edit adding one is drift too)."""
    name = getattr(obj, "name", None) if hasattr(obj, "name") else getattr(obj, "role_name", None)
    source = getattr(obj, "source_description", None)
    return {
        "role": rendered_value(getattr(obj, "role", None)),
        "name": rendered_value(name),
        "metadata": rendered_value(getattr(obj, "metadata", None)),
        **({"source_description": rendered_value(source)} if source else {}),
    }


def _sources_signature(episode_uuids: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join(sorted(episode_uuids)).encode()).hexdigest()
    return digest[:16]


def derived_parts(obj: Any, graph: str, call: str) -> tuple[str, str, list[str]]:
    """(store id, text, source episode uuids) of an edge or node."""
    uuid = getattr(obj, "uuid_", None)
    sources = getattr(obj, "episode_uuids", None) or []
    if not isinstance(uuid, str) or not uuid or not isinstance(sources, list):
        raise EDGE.malformed(call, "an edge or node with a uuid and episode_uuids", obj)
    if hasattr(obj, "fact"):
        kind, text = "edge", getattr(obj, "fact", None)
    else:
        name, summary = getattr(obj, "name", None), getattr(obj, "summary", None)
        kind, text = "node", f"{name}: {summary or ''}" if isinstance(name, str) else None
    if not isinstance(text, str):
        raise EDGE.malformed(call, f"an {kind} with text", obj)
    ident = f"{_graph_of(obj, graph)}/{kind}:{uuid}@{_sources_signature(sources)}"
    return ident, text, [_source_name(s) for s in sources if isinstance(s, str)]


def _source_name(uuid: str) -> str:
    """A source episode's uuid as the store gave it when it is one token, else a digest of it:
    an unbound source is named in the edge's label (``external:zep:unbound:...``), which
    reaches the caller, so a sentence there would be the server's text beside the fact."""
    if core.one_token(uuid):
        return uuid
    return "digest-" + hashlib.sha256(uuid.encode()).hexdigest()[:16]


#: The label of what Zep's extractor (graphiti) writes: model output, never more than derived.
EXTRACTOR_NAME = f"{STORE}:graphiti"
EXTRACTOR = Origin.agent(EXTRACTOR_NAME)

#: Edge fields the adapter renders next to ``fact`` (the context blob shows the dates; the
#: returned Edge carries the name and attributes): the binding's hash covers them.
EDGE_FIELDS = ("name", "valid_at", "invalid_at", "attributes")


def rendered_fields(obj: Any) -> dict[str, str]:
    """The rendered fields of an edge beyond its fact (a node's are in its text)."""
    if not hasattr(obj, "fact"):
        return {}
    return {f: rendered_value(getattr(obj, f, None)) for f in EDGE_FIELDS}


def text_field(obj: Any) -> str | None:
    """An edge's text is its ``fact``; a node's (name and summary) is no one field, so a node
    is never returned as quoted data."""
    return "fact" if hasattr(obj, "fact") else None


def _ended(edge: Any) -> bool:
    """True for an edge Zep invalidated or expired."""
    return bool(getattr(edge, "invalid_at", None) or getattr(edge, "expired_at", None))


def _as_valid(item: StoreItem) -> StoreItem:
    """The edge as it was before Zep invalidated it (its ``invalid_at`` unset)."""
    rendered = {**item.rendered, "invalid_at": rendered_value(None)}
    return replace(item, rendered=rendered)


def _pager(items: list[Any], response: Any) -> SyncPager[Any, Any]:
    return _summarized(SyncPager(has_next=False, items=items, get_next=None, response=response))


def _apager(items: list[Any], response: Any) -> AsyncPager[Any, Any]:
    return _summarized(AsyncPager(has_next=False, items=items, get_next=None, response=response))


def _summarized(pager: Any) -> Any:
    """The pager with its items' withheld report as ``.gnomon`` (where the items carry one)."""
    summary = getattr(pager.items, "gnomon", None)
    if summary is not None:  # the SDK's pager is a frozen dataclass: an extra attribute only
        object.__setattr__(pager, "gnomon", summary)
    return pager


def all_items(pager: Any, call: str) -> Any:
    """Every item of a pager and the last page's response, reading the following pages; for
    the async SDK (whose methods return a coroutine of a pager), a coroutine doing the same."""
    if inspect.isawaitable(pager):
        return _aall_items(pager, call)
    if not isinstance(pager, SyncPager):
        raise EDGE.malformed(call, "a pager", pager)
    return _collected([(page.items, page.response) for page in pager.iter_pages()], call)


def first_page(pager: Any, call: str) -> Any:
    """The items of a pager's first page and its response (a search ranks its best hits
    first: the top ``page_size`` are the first page); for the async SDK, a coroutine."""
    if inspect.isawaitable(pager):
        return _afirst_page(pager, call)
    if not isinstance(pager, SyncPager):
        raise EDGE.malformed(call, "a pager", pager)
    return _collected([(pager.items, pager.response)], call)


async def _afirst_page(coroutine: Any, call: str) -> tuple[list[Any], Any]:
    pager = await coroutine
    if not isinstance(pager, AsyncPager):
        raise EDGE.malformed(call, "a pager", pager)
    return _collected([(pager.items, pager.response)], call)


async def _aall_items(coroutine: Any, call: str) -> tuple[list[Any], Any]:
    pager = await coroutine
    if not isinstance(pager, AsyncPager):
        raise EDGE.malformed(call, "a pager", pager)
    return _collected([(page.items, page.response) async for page in pager.iter_pages()], call)


def _collected(pages: list[tuple[Any, Any]], call: str) -> tuple[list[Any], Any]:
    items: list[Any] = []
    response = None
    for page_items, page_response in pages:
        if page_items is None and items == []:
            raise EDGE.malformed(call, "a page with items", page_response)
        items.extend(page_items or [])
        response = page_response
    return items, response


# -- the contract backend --------------------------------------------------------------------


class ZepBackend(StoreBackend):
    """Graph episodes of one graph (``scope={"graph_uuid": ...}``) on a sync ``Zep`` client.

    Zep cannot change an episode's content, so :meth:`update` deletes the episode and adds the
    new text as a new one, returning it (its store id changes).
    """

    name: ClassVar[str] = STORE
    limits: ClassVar[MetadataLimits] = LIMITS

    def __init__(self, client: Zep) -> None:
        self.client = client
        self.edges: _Core | None = None

    def derived(self, store_id: str) -> bool:
        """Edges and nodes are Zep's own extractions, not items a caller wrote."""
        kind, _, rest = split_store_id(store_id)[1].partition(":")
        return kind in ("edge", "node") and "@" in rest

    def store_conflicts(self, scope: Mapping[str, str]) -> tuple[str, ...]:
        """Zep's invalidations recorded out of band: every edge of the graph, recorded and
        linked as a read would (:meth:`_Core.prepare`); the edges linked."""
        graph, call = scope.get("graph_uuid"), "graph.edge.list"
        if not graph or self.edges is None:
            return ()
        edges, _ = EDGE.run(call, lambda: all_items(self.client.graph.edge.list(graph), call))
        return tuple(self.edges.prepare(edges, graph, call)[2])

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        graph = scope["graph_uuid"]
        call = "graph.episode.add"
        result = EDGE.run(
            call,
            lambda: self.client.graph.episode.add(
                graph, data=text, type="text", metadata=dict(metadata)
            ),
        )
        episode = getattr(result, "episode", None)
        if not isinstance(episode, Episode):
            raise EDGE.malformed(call, "an AddEpisodeResult with an episode", result)
        return content_item(episode, graph, call)

    def get(self, store_id: str) -> StoreItem | None:
        graph, uuid = split_store_id(store_id)
        try:
            episode = EDGE.run(
                "graph.episode.get", lambda: self.client.graph.episode.get(graph, uuid)
            )
        except StoreCallError as exc:
            if exc.status == 404:
                return None
            raise
        return content_item(episode, graph, "graph.episode.get")

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        graph, call = scope["graph_uuid"], "graph.search_episodes"
        pager = EDGE.run(
            call, lambda: self.client.graph.search_episodes(graph, query=query, page_size=limit)
        )
        items, _ = all_items(pager, call)
        return [content_item(e, graph, call) for e in items[:limit]]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        graph, call = scope["graph_uuid"], "graph.episode.list"
        pager = EDGE.run(
            call,
            lambda: self.client.graph.episode.list(graph, page_size=limit, cursor=cursor),
        )
        if not isinstance(pager, SyncPager) or pager.items is None:
            raise EDGE.malformed(call, "a page of episodes", pager)
        items = [content_item(e, graph, call) for e in pager.items]
        next_cursor = getattr(pager.response, "next_cursor", None)
        return Page(items, next_cursor if pager.has_next else None)

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem:
        graph, _ = split_store_id(store_id)
        self.delete(store_id)
        return self.write(text, metadata, {"graph_uuid": graph})

    def delete(self, store_id: str) -> None:
        graph, uuid = split_store_id(store_id)
        EDGE.run("graph.episode.delete", lambda: self.client.graph.episode.delete(graph, uuid))


# -- the firewall side shared by the sync and async clients -------------------------------------


class _Core(core.Core):
    _text_name = "content"

    def __init__(self, adapter: Any) -> None:
        super().__init__(adapter)
        self.threads: dict[str, str] = {}  # thread uuid -> graph uuid

    # writes

    def begin_messages(
        self, messages: Any, origin: WriteOrigin | None, call: str
    ) -> tuple[list[PendingWrite], list[AddMessage]]:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise StoreCallError("messages must be a list of AddMessage", store=STORE, call=call)
        parsed = [
            m if isinstance(m, AddMessage) else AddMessage.model_validate(m) for m in messages
        ]
        for m in parsed:  # refuse bad metadata for any message before recording any of them
            merged_metadata(STORE, call, LIMITS, m.metadata)
        pendings = [
            self.begin(
                call,
                m.content,
                m.metadata,
                origin if origin is not None else self.guard.message_origin(m.role, m.name),
                speaker_fields(m),
            )
            for m in parsed
        ]
        sent = [
            m.model_copy(update={"metadata": p.metadata, "content": p.text})
            for m, p in zip(parsed, pendings, strict=True)
        ]
        return pendings, sent

    def confirm_messages(
        self, pendings: list[PendingWrite], result: Any, graph: str, call: str
    ) -> list[StoreItem]:
        stored = getattr(result, "messages", None)
        if not isinstance(stored, list) or len(stored) != len(pendings):
            raise EDGE.malformed(call, f"{len(pendings)} stored messages", result)
        items = [content_item(m, graph, call) for m in stored]
        for pending, item in zip(pendings, items, strict=True):
            self.guard.confirm_write(pending, item.store_id, stored=item)
        return items

    # reads

    def contents(
        self, objs: Sequence[Any], graph: str, call: str, query: str, limit: int | None = None
    ) -> list[Any]:
        """Messages or episodes that passed; ``limit``: see :meth:`Core.passed`."""
        return self.passed([content_item(o, graph, call) for o in objs], query, limit)

    def derived(
        self, objs: Sequence[Any], graph: str, call: str, query: str, limit: int | None = None
    ) -> list[Any]:
        """Edges or nodes that passed: see :meth:`screen_derived`."""
        hits = self.screen_derived(objs, graph, call, query, limit)
        return attach([self.annotate(s) for s in hits], hits.summary)

    def screen_derived(
        self, objs: Sequence[Any], graph: str, call: str, query: str, limit: int | None = None
    ) -> Hits:
        """Edges or nodes: each labelled with the extractor joined with its source episodes
        (recorded on first sight), then screened; dropped if any source is quarantined or
        malicious. Only those that passed (accepted or quoted) are returned. ``limit``: the
        caller's ``page_size`` of an over-fetched search (:meth:`Core.screen`)."""
        items, tainted, _linked = self.prepare(objs, graph, call)
        screened = self.screen(items, query, limit)
        kept = [s for s in screened if s.passed and s.item.store_id not in tainted]
        return Hits(kept, screened.summary)

    def prepare(
        self, objs: Sequence[Any], graph: str, call: str
    ) -> tuple[list[StoreItem], set[str], list[str]]:
        """Edges or nodes as items, each recorded on first sight, and Zep's invalidations
        linked (:meth:`_invalidations`): ``(items, tainted store ids, linked store ids)``."""
        parts = [derived_parts(o, graph, call) for o in objs]
        items = [
            StoreItem(i, text, raw=o, rendered=rendered_fields(o), text_field=text_field(o))
            for (i, text, _), o in zip(parts, objs, strict=True)
        ]
        known = self.guard.wall.store.bindings_by_store_id(STORE, [i.store_id for i in items])
        sources = self._sources(graph, [s for _, _, srcs in parts for s in srcs])
        tainted: set[str] = set()
        fresh = []
        for item, (_, _, srcs) in zip(items, parts, strict=True):
            beliefs = [sources.get(s) for s in srcs]
            if any(b is not None and b.security_status in _TAINTED for b in beliefs):
                tainted.add(item.store_id)
            if item.store_id not in known and item.text.strip():
                fresh.append((item, srcs, beliefs))
        # facts from user statements only are recorded first: recording an untrusted one
        # joins it into this session's label, and a fact's lineage is what the session read
        # *before* this read, whatever order the server listed the read's items in
        fresh.sort(key=lambda f: not _user_sourced(f[2]))
        for item, srcs, beliefs in fresh:
            self._record_derived(item, srcs, beliefs, call)
        return items, tainted, self._invalidations(items, call)

    def _invalidations(self, items: Sequence[StoreItem], call: str) -> list[str]:
        """Graphiti's own conflict signal: an edge the firewall bound, now invalid or expired
        and otherwise unchanged, is linked to the valid edge of the same read that replaced it
        (same source node) by :meth:`Guard.store_signal` (contested, contradicted or
        superseded by origin), and its binding follows the new dates (not drift). An
        invalidated edge with no replacement in the read is left to the drift check."""
        store = self.guard.wall.store
        known = store.bindings_by_store_id(STORE, [i.store_id for i in items])
        valid = [i for i in items if not _ended(i.raw)]
        linked: list[str] = []
        for item in items:
            binding = known.get(item.store_id)
            if (
                not _ended(item.raw)
                or binding is None
                or binding.state != BindingState.WRITTEN
                or (binding.detail or "").startswith("invalidated")
                or _as_valid(item).content_hash != binding.content_hash
            ):
                continue
            node = getattr(item.raw, "source_node_uuid", None)
            partner = next(
                (
                    known[v.store_id]
                    for v in valid
                    if node
                    and getattr(v.raw, "source_node_uuid", None) == node
                    and v.store_id in known
                ),
                None,
            )
            old = store.get_belief(binding.belief_id)
            new = store.get_belief(partner.belief_id) if partner is not None else None
            if old is None or new is None:
                continue
            self.guard.store_signal(
                old, new, f"{STORE}.{call}: edge {getattr(item.raw, 'uuid_', '')} invalidated"
            )
            self.guard.rebind(binding, item.content_hash, f"invalidated; replaced by {new.id}")
            linked.append(item.store_id)
        return linked

    def _sources(self, graph: str, uuids: list[str]) -> dict[str, Belief]:
        ids = [store_id(graph, u) for u in dict.fromkeys(uuids)]
        bindings = self.guard.wall.store.bindings_by_store_id(STORE, ids)
        beliefs = self.guard.wall.store.get_beliefs([b.belief_id for b in bindings.values()])
        out = {}
        for ident, binding in bindings.items():
            belief = beliefs.get(binding.belief_id)
            if belief is not None:
                out[split_store_id(ident)[1]] = belief
        return out

    def _record_derived(
        self, item: StoreItem, sources: list[str], beliefs: list[Belief | None], call: str
    ) -> None:
        if _user_sourced(beliefs):
            # every source episode is a user's clean statement: an extracted fact, which the
            # policy's extracted rule may admit (Session.extract joins this session's reads too)
            fact = self.guard.session.extract(
                item.text,
                inputs=[b.id for b in beliefs if b is not None],
                store=STORE,
                extractor=EXTRACTOR_NAME,
            )
            made = self.guard.bind_pending(
                fact, item.text, {}, store_id=item.store_id, rendered=item.rendered
            )
            self.guard.confirm_write(made, item.store_id)
            return
        labels = [
            b.origin if b is not None else Origin.external(f"{STORE}:unbound:{s}")
            for s, b in zip(sources, beliefs, strict=True)
        ] or [Origin.external(f"{STORE}:unsourced:{item.store_id}")]
        # at most derived: Zep's extractor wrote it, whatever the store says its sources are
        joined = Origin.join(EXTRACTOR, *labels)
        # the adapter's own read of what Zep extracted (host side), not the agent's report
        observed = self.guard.session._observe_call(
            ToolCall(
                tool=f"{STORE}.extracted",
                content=item.text,
                origin=joined,
                args={"store_id": item.store_id, "episode_uuids": ",".join(sources)},
            ),
            host_read=True,
        )
        pending = self.guard.bind_pending(
            observed.content[0], item.text, {}, store_id=item.store_id, rendered=item.rendered
        )
        self.guard.confirm_write(pending, item.store_id)

    def context(self, response: Any, graph: str, call: str, query: str) -> tuple[str, Any, Summary]:
        """The rebuilt blob, the screened results of a ``graph.get_context`` response, and the
        report of its edges and nodes (screened as one read: the policy's quote cap holds for
        the blob as a whole) with the contradiction channel of all three reads (edges, nodes,
        episodes)."""
        results = getattr(response, "results", None)
        if not isinstance(response, GraphContextResponse) or results is None:
            raise EDGE.malformed(call, "a context response with results", response)
        derived = self.screen_derived(
            [*(results.edges or []), *(results.nodes or [])], graph, call, query
        )
        edges = [s for s in derived if text_field(s.item.raw) is not None]
        nodes = [s for s in derived if text_field(s.item.raw) is None]
        episodes = self.contents(results.episodes or [], graph, call, query)
        facts = [s for s in edges if s.verdict == "accepted"]
        entities = [s.item.raw for s in nodes if s.verdict == "accepted"]
        quoted = [
            {"text": s.item.text, "origin": s.belief.origin.describe()}
            for s in (*edges, *nodes)
            if s.verdict == "quoted" and s.belief is not None
        ]
        blob = render_context(
            [
                {
                    "fact": s.item.raw.fact,
                    "valid_at": s.item.raw.valid_at,
                    "invalid_at": s.item.raw.invalid_at,
                    "extracted": s.extracted,
                }
                for s in facts
            ],
            [{"name": n.name, "summary": n.summary} for n in entities],
            quoted,
        )
        results = ContextResults(
            edges=[self.annotate(s) for s in edges],
            nodes=[self.annotate(s) for s in nodes],
            episodes=episodes,
        )
        channel: dict[str, dict[str, Any]] = {}
        for summary in (derived.summary, getattr(episodes, "gnomon", {})):
            for entry in summary.get("contradictions", []):
                channel.setdefault(entry["id"], entry)
        return blob, results, Summary({**derived.summary, "contradictions": list(channel.values())})

    def context_query(self, messages: list[Any], call: str) -> str:
        texts = [getattr(m, "content", None) for m in messages[-CONTEXT_MESSAGES:]]
        return " ".join(t for t in texts if isinstance(t, str)) or "context"

    def episode(self, item: StoreItem, query: str) -> Any:
        """One episode read: annotated, or the same shape with none of its text."""
        return self.one(item, query)


def _user_sourced(beliefs: Sequence[Belief | None]) -> bool:
    """Every source episode of a fact is known and a user's clean statement."""
    return bool(beliefs) and all(b is not None and user_statement(b) for b in beliefs)


def _thread_graph(thread: Any, call: str) -> str:
    graph = getattr(thread, "graph_uuid", None)
    if not isinstance(graph, str) or not graph:
        raise EDGE.malformed(call, "a thread with a graph_uuid", thread)
    return graph


class _Refusing(core.Resource):
    _store = STORE
    _converted = staticmethod(EDGE.converted)


def _paged(**options: Any) -> core.guarded:
    """A read returning the SDK's pager: one page of the screened items, sync or async."""
    return core.guarded(sync=lambda r: _pager(*r), awaited=lambda r: _apager(*r), **options)


class Thread(_Refusing):
    _path = "thread."
    _SDK = core.sdk_pair(sdk_thread, "ThreadClient")
    #: The raw ``graph`` resource: a thread's context is read from the thread's graph.
    _graph_client: Any = None

    create = core.guarded()
    get = core.guarded()

    def _graph(self, thread_uuid: str) -> core.Flow[str]:
        if thread_uuid not in self._core.threads:
            thread = yield core.Call("thread.get", lambda: self._raw.get(thread_uuid))
            self._core.threads[thread_uuid] = _thread_graph(thread, "thread.get")
        return self._core.threads[thread_uuid]  # type: ignore[no-any-return]

    @core.guarded(extras=core.WRITE)
    def add_messages(self, a: core.Args) -> core.Flow:
        """Each message recorded with the label its role gives (the host's user channel for
        role=user), then written with the firewall's metadata keys."""
        graph = yield from self._graph(a["thread_uuid"])
        pendings, sent = self._core.begin_messages(a["messages"], a.origin, a.name)
        with self._core.guard.writing(pendings, a.name):
            result = yield a.raw(messages=sent, return_context=...)
            items = self._core.confirm_messages(pendings, result, graph, a.name)
        context = None  # the server's own blob, asked for or not, never reaches the caller
        if a.get("return_context"):
            context = yield from self._context(a["thread_uuid"])
        # the messages as the store answered, screened as a read
        messages = self._core.each(items, a.name)
        shown = {"context": context, "messages": messages, "task": core.settled(result.task)}
        return result.model_copy(update={**core.undeclared(result), **shown})

    @_paged()
    def list_messages(self, a: core.Args) -> core.Flow:
        graph = yield from self._graph(a["thread_uuid"])
        items, response = yield a.raw().then(lambda pager: all_items(pager, a.name))
        return self._core.contents(items, graph, a.name, a.name), response

    @core.guarded
    def get_context(self, a: core.Args) -> core.Flow:
        """Rebuilt from the thread graph's facts and entities that pass the policy."""
        return ThreadContextResponse(context=(yield from self._context(a["thread_uuid"])))

    def _context(self, thread_uuid: str) -> core.Flow[str]:
        call = "thread.get_context"
        graph = yield from self._graph(thread_uuid)
        recent = yield core.Call(
            call,
            lambda: self._raw.list_messages(thread_uuid, page_size=CONTEXT_MESSAGES, order="desc"),
        )
        query = self._core.context_query(list(reversed(recent.items or [])), call)
        response = yield core.Call(
            call, lambda: self._graph_client.get_context(graph, query=query, include_results=True)
        )
        blob, _, _ = self._core.context(response, graph, call, query)
        return blob  # type: ignore[no-any-return]


class Episodes(_Refusing):
    _path = "graph.episode."
    _SDK = core.sdk_pair(sdk_episode, "EpisodeClient")

    @core.guarded(extras=core.WRITE)
    def add(self, a: core.Args) -> core.Flow:
        pending = self._core.begin(
            a.name, a["data"], a.get("metadata"), a.origin, a.sent("source_description")
        )

        def parse(result: Any) -> StoreItem:
            episode = getattr(result, "episode", None)
            if not isinstance(episode, Episode):
                raise EDGE.malformed(a.name, "an AddEpisodeResult with an episode", result)
            return content_item(episode, a["graph_uuid"], a.name)

        result, item = yield from self._core.write(
            pending, a.raw(data=pending.text, metadata=pending.metadata), parse, stored=True
        )
        shown = {"episode": self._core.episode(item, a.name), "task": core.settled(result.task)}
        return result.model_copy(update={**core.undeclared(result), **shown})

    @core.guarded
    def get(self, a: core.Args) -> core.Flow:
        episode = yield a.raw()
        return self._core.episode(content_item(episode, a["graph_uuid"], a.name), a.name)

    @_paged()
    def list(self, a: core.Args) -> core.Flow:
        items, response = yield a.raw().then(lambda pager: all_items(pager, a.name))
        return self._core.contents(items, a["graph_uuid"], a.name, a.name), response

    delete = core.deleting(lambda a: store_id(a["graph_uuid"], a["episode_uuid"]))


class Graph(_Refusing):
    _path = "graph."
    _SDK = core.sdk_pair(sdk_graph, "GraphClient")
    _children = core.children(Episodes)

    def _search(self, a: core.Args, screen: Callable[..., list[Any]]) -> core.Flow:
        """The first page of :func:`~adapters.guard.fetch_size` hits for the caller's
        ``page_size`` (over-fetched), screened, the ``page_size`` shown ranked trusted first:
        look-alike writes cannot crowd a trusted memory out of the page."""
        size = a.get("page_size")
        k = size if isinstance(size, int) and size > 0 else SEARCH_PAGE_SIZE
        fetched = a.raw(page_size=fetch_size(k))
        items, response = yield fetched.then(lambda pager: first_page(pager, a.name))
        return screen(items, a["graph_uuid"], a.name, a["query"], k), response

    @_paged()
    def search_edges(self, a: core.Args) -> core.Flow:
        return (yield from self._search(a, self._core.derived))

    @_paged()
    def search_nodes(self, a: core.Args) -> core.Flow:
        return (yield from self._search(a, self._core.derived))

    @_paged()
    def search_episodes(self, a: core.Args) -> core.Flow:
        return (yield from self._search(a, self._core.contents))

    @core.guarded
    def get_context(self, a: core.Args) -> core.Flow:
        """Rebuilt from the edges and nodes that pass the policy (see the module docstring)."""
        graph, query = a["graph_uuid"], a["query"]
        response = yield a.raw(include_results=True)
        blob, results, summary = self._core.context(response, graph, a.name, query)
        answer = GraphContextResponse(
            context=blob,
            results=results if a.get("include_results") else None,
            truncated=response.truncated,
        )
        return attach(answer, summary)


class User(_Refusing):
    """Containers (no memory text): a user's ``metadata`` is not returned, and a name or email
    holding a credential or markup is blanked (:meth:`Core.container`)."""

    _path = "user."
    _SDK = core.sdk_pair(sdk_user, "UserClient")

    create = core.container(*USER_FREE_TEXT)
    get = core.container(*USER_FREE_TEXT)
    lookup = core.container(*USER_FREE_TEXT)


class GuardedZep(core.GuardedClient):
    """A ``zep_cloud.client.Zep`` behind the firewall (see the module docstring).

    ``gnomon_origin=`` on a write (host code only) records it with an explicit origin;
    ``user_channel=`` (the host's channel for its user) labels role=user thread messages as the
    user's. ``zep.gnomon`` is the store-independent :class:`~adapters.adapter.Adapter` over
    the graph episodes (audit, import, export, sync with ``scope={"graph_uuid": ...}``).
    """

    _store = STORE
    _SDK = (Zep, AsyncZep)
    _Core = _Core
    _children = core.children(Thread, Graph, User)

    def _wire(self, client: Any) -> None:
        self.thread._graph_client = client.graph
        self.gnomon._backend.edges = self._core  # sync links the invalidations Zep recorded

    def _backend(self, client: Zep) -> ZepBackend:
        return ZepBackend(client)

    def _sync_twin(self, client: AsyncZep) -> Zep:
        wrapper = client._client_wrapper
        return Zep(
            api_key=wrapper.api_key,
            base_url=wrapper.get_base_url(),
            timeout=wrapper.get_timeout(),
            max_retries=0,
        )


class GuardedAsyncZep(GuardedZep):
    """A ``zep_cloud.client.AsyncZep`` behind the firewall: :class:`GuardedZep`'s flows with the
    SDK's coroutines; the firewall steps run on the guard's worker thread. ``zep.gnomon``
    (audit, import, export, sync) runs on a sync client sharing its settings (or
    ``sync_client=``)."""

    _ASYNC = True


__all__ = ["GuardedAsyncZep", "GuardedZep", "ZepBackend"]
