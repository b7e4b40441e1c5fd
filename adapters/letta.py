"""Letta behind the firewall: :class:`GuardedLetta` and :class:`GuardedAsyncLetta`.

One line to adopt::

    client = GuardedLetta(Letta(api_key=...), wall, project="shop", actor="coder", user="alice")

The guarded client keeps ``letta-client``'s resource layout, method names, signatures and return
types for the memory surface, and refuses every other SDK method
(:class:`~adapters.errors.BypassRefusedError`):

* ``client.agents.blocks.retrieve / update / list`` (core memory, by agent and label);
* ``client.blocks.create / retrieve / update / delete / list`` (standalone blocks);
* ``client.agents.passages.create / list / search / delete`` (an agent's archival memory);
* ``client.archives.create`` and ``client.archives.passages.create / delete`` (shared archives);
* ``client.passages.search``.

**Blocks.** A block is one text value per label, so a block maps to *one belief per version*:
its value is the belief's statement, and every value written through the firewall
(``blocks.update(value=...)``, ``agents.blocks.update(label, value=...)``) is a revision: a new
agent-authored belief supersedes the previous one and the binding follows the block id. An agent
editing its own block is exactly such a write, so it inherits its session's label (everything
the session has read), as :meth:`Session.remember` does. A retrieved block whose belief fails
the ContextPolicy is returned *redacted*, not raised: the same ``BlockResponse`` with an empty
``value``, no ``description`` or ``metadata``, and ``gnomon = {"withheld": True, "belief_id",
"reasons"}`` (an agent loop that renders core memory keeps working and never sees the text).
Blocks in lists are dropped when they fail. A block's binding hash covers its label and
description as well as its value (they are rendered with it), so editing either around the
firewall is drift. An update or delete from a write of lower integrity than a supported block
or passage (the agent after reading a web page, against the user's fact) is refused
(:class:`~adapters.errors.ProtectedBeliefError`), recorded as a contradicting candidate; the host
revises the user's memory with ``gnomon_origin=``. Blocks that existed before the firewall (a
persona
written at agent creation) are unknown external content until imported and promoted.

**Passages.** Agent archival passages carry *tags only* (``agents.passages.create`` has no
metadata), so the belief id travels as the tag ``gnomon:<belief_id>``; archive passages carry
the firewall's metadata keys. A passage's store id is ``"<agent or archive id>/<passage id>"``
because Letta can only address a passage through its container. The tag or metadata is only a
hint: the firewall trusts its own bindings, never what the store says about itself.

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

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from adapters.errors import MissingSDKError

try:
    import letta_client
    from letta_client import AsyncLetta, Letta
    from letta_client.pagination import AsyncArrayPage, SyncArrayPage
    from letta_client.types import BlockResponse, Passage
except ImportError as exc:  # pragma: no cover - exercised by the missing-SDK test
    raise MissingSDKError("letta", "letta", "letta-client") from exc

from adapters.adapter import Adapter
from adapters.base import (
    BELIEF_KEY,
    GNOMON_KEYS,
    MetadataLimits,
    Page,
    StoreBackend,
    StoreItem,
    merged_metadata,
    rendered_value,
)
from adapters.core import Refusing
from adapters.errors import (
    AdapterError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
    malformed,
    status_hint,
)
from adapters.guard import Guard, PendingWrite, Screened
from adapters.withheld import attach
from firewall.channels import Channel, WriteOrigin
from firewall.firewall import Firewall
from firewall.policy import ContextPolicy
from firewall.session import Session

STORE = "letta"
TAG_PREFIX = "gnomon:"
DEFAULT_LABEL = "memory"
T = TypeVar("T")


def belief_tag(belief_id: str) -> str:
    """The tag that carries a belief id on an agent archival passage.

    >>> belief_tag("bel_1")
    'gnomon:bel_1'
    """
    return f"{TAG_PREFIX}{belief_id}"


def _omitted(value: Any) -> bool:
    return value is None or isinstance(value, letta_client.Omit | letta_client.NotGiven)


# -- errors ----------------------------------------------------------------------------------


@contextmanager
def converted(call: str) -> Iterator[None]:
    """Turn letta-client's exceptions into adapter errors naming ``letta.<call>``."""
    try:
        yield
    except AdapterError:
        raise
    except letta_client.APITimeoutError as exc:
        raise StoreTimeoutError(
            "the request timed out", store=STORE, call=call, hint="retry, or raise timeout="
        ) from exc
    except letta_client.APIStatusError as exc:
        raise StoreCallError(
            f"HTTP {exc.status_code}: {exc.message}",
            store=STORE,
            call=call,
            status=exc.status_code,
            hint=status_hint(exc.status_code),
        ) from exc
    except letta_client.APIConnectionError as exc:
        raise StoreCallError(
            f"could not reach the server: {exc}",
            store=STORE,
            call=call,
            hint="check base_url and that the Letta server is running",
        ) from exc
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise StoreResponseError(
            f"unexpected response: {type(exc).__name__}: {exc}", store=STORE, call=call
        ) from exc


def _malformed(call: str, what: str, got: Any) -> StoreResponseError:
    return malformed(STORE, call, what, got)


# -- SDK objects <-> store items ---------------------------------------------------------------


def block_item(block: Any, call: str, scope: Mapping[str, str] | None = None) -> StoreItem:
    ident, value = getattr(block, "id", None), getattr(block, "value", None)
    if not isinstance(block, BlockResponse) or not isinstance(ident, str):
        raise _malformed(call, "a block with an id", block)
    if not isinstance(value, str):
        raise _malformed(call, "a block with a string value", block)
    metadata = getattr(block, "metadata", None)
    return StoreItem(
        store_id=ident,
        text=value,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        scope=dict(scope or ({"label": block.label} if block.label else {})),
        raw=block,
        # a block reaches the caller (and the agent's core memory) with its label and
        # description next to its value: the hash covers them
        rendered={
            "label": rendered_value(block.label),
            "description": rendered_value(getattr(block, "description", None)),
        },
    )


def passage_store_id(container: str, passage_id: str) -> str:
    return f"{container}/{passage_id}"


def split_passage_id(store_id: str) -> tuple[str, str]:
    container, _, passage = store_id.partition("/")
    return container, passage


def _tag_metadata(tags: Sequence[str] | None) -> dict[str, Any]:
    found = [t[len(TAG_PREFIX) :] for t in tags or () if t.startswith(TAG_PREFIX)]
    return {BELIEF_KEY: found[0]} if found else {}


def passage_item(passage: Any, container: str, call: str) -> StoreItem:
    ident, text = getattr(passage, "id", None), getattr(passage, "text", None)
    if not isinstance(passage, Passage) or not isinstance(ident, str) or not isinstance(text, str):
        raise _malformed(call, "a passage with an id and text", passage)
    metadata = dict(passage.metadata) if isinstance(passage.metadata, dict) else {}
    return StoreItem(
        store_id=passage_store_id(container, ident),
        text=text,
        metadata={**_tag_metadata(passage.tags), **metadata},
        scope={"container": container},
        raw=passage,
    )


def search_result_item(result: Any, agent_id: str, call: str) -> StoreItem:
    ident, text = getattr(result, "id", None), getattr(result, "content", None)
    if not isinstance(ident, str) or not isinstance(text, str):
        raise _malformed(call, "a search result with an id and content", result)
    return StoreItem(
        store_id=passage_store_id(agent_id, ident),
        text=text,
        metadata=_tag_metadata(getattr(result, "tags", None)),
        scope={"agent_id": agent_id},
        raw=result,
    )


def _listed(page: Any, call: str) -> list[Any]:
    """Every item of an array page, fetching the following pages (``?after=``). A page whose
    body was not a JSON array comes back from the SDK with ``items=None``: refused."""
    if not isinstance(page, SyncArrayPage):
        raise _malformed(call, "an array page", page)
    items: list[Any] = []
    for one in page.iter_pages():
        if not isinstance(one.items, list):
            raise _malformed(call, "a JSON array of items", one.items)
        items.extend(one.items)
    return items


async def _alisted(paginator: Any, call: str) -> list[Any]:
    items: list[Any] = []
    async for one in (await paginator).iter_pages():
        if not isinstance(one.items, list):
            raise _malformed(call, "a JSON array of items", one.items)
        items.extend(one.items)
    return items


def annotate(screened: Screened) -> Any:
    """The SDK object of a hit that passed, with its labels as ``gnomon``."""
    raw = screened.item.raw
    out = raw.model_copy()
    out.gnomon = screened.annotation()
    return out


def redacted(screened: Screened) -> BlockResponse:
    """A block whose belief failed the policy: same shape, nothing of its text."""
    block = screened.item.raw
    out = block.model_copy(update={"value": "", "description": None, "metadata": {}})
    out.gnomon = {
        "withheld": True,
        "belief_id": screened.belief.id if screened.belief else None,
        "reasons": [str(r) for r in screened.reasons] or [screened.note or screened.verdict],
    }
    return out  # type: ignore[no-any-return]


class _ScreenedPage(SyncArrayPage[Any]):
    """One page holding every screened item; never fetches another."""

    def has_next_page(self) -> bool:
        return False


class _ScreenedAsyncPage(AsyncArrayPage[Any]):
    def has_next_page(self) -> bool:
        return False


def screened_page(items: list[Any]) -> SyncArrayPage[Any]:
    return _with_summary(_ScreenedPage.construct(items=items), items)


def _with_summary(page: Any, items: list[Any]) -> Any:
    summary = getattr(items, "gnomon", None)
    return page if summary is None else attach(page, summary)


class ScreenedAsyncList:
    """What a guarded async ``list`` returns: awaitable (a page) and async-iterable, like the
    SDK's ``AsyncPaginator``, over the screened items only."""

    def __init__(self, load: Callable[[], Awaitable[list[Any]]]) -> None:
        self._load = load

    async def _page(self) -> AsyncArrayPage[Any]:
        items = await self._load()
        return _with_summary(_ScreenedAsyncPage.construct(items=items), items)  # type: ignore[no-any-return]

    def __await__(self) -> Any:
        return self._page().__await__()

    async def __aiter__(self) -> Any:
        for item in await self._load():
            yield item


# -- the contract backend ----------------------------------------------------------------------


class LettaBackend(StoreBackend):
    """Raw calls against a sync ``Letta`` client.

    The scope picks the kind of memory: ``{"agent_id", "label"}`` an agent's core-memory block,
    ``{"agent_id"}`` an agent's archival passages, ``{"archive_id"}`` an archive's passages,
    anything else standalone blocks (``{"label": ...}`` selects the label, default ``memory``).
    Standalone blocks have no relevance search in Letta: :meth:`search` lists the label's
    blocks and ranks them by shared words.
    """

    name: ClassVar[str] = STORE
    limits: ClassVar[MetadataLimits] = MetadataLimits()

    def __init__(self, client: Letta) -> None:
        self.client = client

    # write

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        c = self.client
        if "archive_id" in scope:
            with converted("archives.passages.create"):
                p = c.archives.passages.create(scope["archive_id"], text=text, metadata=metadata)
            return passage_item(p, scope["archive_id"], "archives.passages.create")
        if "agent_id" in scope and "label" in scope:
            with converted("agents.blocks.update"):
                b = c.agents.blocks.update(
                    scope["label"], agent_id=scope["agent_id"], value=text, metadata=metadata
                )
            return block_item(b, "agents.blocks.update", scope)
        if "agent_id" in scope:
            tags = [belief_tag(metadata[BELIEF_KEY])] if BELIEF_KEY in metadata else []
            with converted("agents.passages.create"):
                made = c.agents.passages.create(scope["agent_id"], text=text, tags=tags)
            if not isinstance(made, list) or len(made) != 1:
                raise _malformed("agents.passages.create", "a list of one passage", made)
            return passage_item(made[0], scope["agent_id"], "agents.passages.create")
        with converted("blocks.create"):
            b = c.blocks.create(
                label=scope.get("label", DEFAULT_LABEL), value=text, metadata=dict(metadata)
            )
        return block_item(b, "blocks.create")

    # read

    def get(self, store_id: str) -> StoreItem | None:
        if "/" in store_id:
            container = split_passage_id(store_id)[0]
            for item in self._passages(container):
                if item.store_id == store_id:
                    return item
            return None
        try:
            with converted("blocks.retrieve"):
                block = self.client.blocks.retrieve(store_id)
        except StoreCallError as exc:
            if exc.status == 404:
                return None
            raise
        return block_item(block, "blocks.retrieve")

    def _passages(self, container: str) -> list[StoreItem]:
        if container.startswith("agent-"):
            with converted("agents.passages.list"):
                found = self.client.agents.passages.list(container, limit=1000)
            if not isinstance(found, list):
                raise _malformed("agents.passages.list", "a list of passages", found)
            return [passage_item(p, container, "agents.passages.list") for p in found]
        with converted("passages.search"):
            hits = self.client.passages.search(archive_id=container, limit=1000)
        return [passage_item(h.passage, container, "passages.search") for h in hits]

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        c = self.client
        if "archive_id" in scope:
            with converted("passages.search"):
                hits = c.passages.search(query=query, archive_id=scope["archive_id"], limit=limit)
            if not isinstance(hits, list):
                raise _malformed("passages.search", "a list of results", hits)
            return [passage_item(h.passage, scope["archive_id"], "passages.search") for h in hits]
        if "agent_id" in scope and "label" not in scope:
            agent = scope["agent_id"]
            with converted("agents.passages.search"):
                found = c.agents.passages.search(agent, query=query, top_k=limit)
            results = getattr(found, "results", None)
            if not isinstance(results, list):
                raise _malformed("agents.passages.search", "results", found)
            return [search_result_item(r, agent, "agents.passages.search") for r in results]
        items = self.list_page(scope=scope, limit=1000).items
        return rank(query, items)[:limit]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        c = self.client
        if "agent_id" in scope and "label" not in scope:
            with converted("agents.passages.list"):
                kwargs: dict[str, Any] = {"limit": limit}
                if cursor:
                    kwargs["after"] = split_passage_id(cursor)[1]
                found = c.agents.passages.list(scope["agent_id"], **kwargs)
            if not isinstance(found, list):
                raise _malformed("agents.passages.list", "a list of passages", found)
            items = [passage_item(p, scope["agent_id"], "agents.passages.list") for p in found]
        elif "archive_id" in scope:
            items = self._passages(scope["archive_id"]) if cursor is None else []
            return Page(items, None)
        elif "agent_id" in scope:
            with converted("agents.blocks.list"):
                page = c.agents.blocks.list(scope["agent_id"], limit=limit, after=cursor or omit())
                blocks = page.items
            items = [block_item(b, "agents.blocks.list") for b in blocks]
        else:
            with converted("blocks.list"):
                page = c.blocks.list(
                    label=scope.get("label", DEFAULT_LABEL), limit=limit, after=cursor or omit()
                )
                blocks = page.items
            items = [block_item(b, "blocks.list") for b in blocks]
        return Page(items, items[-1].store_id if len(items) == limit else None)

    # update, delete

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem:
        if "/" in store_id:
            raise StoreCallError(
                "Letta has no passage update",
                store=STORE,
                call="update",
                hint="delete the passage and create a new one",
            )
        with converted("blocks.update"):
            block = self.client.blocks.update(store_id, value=text, metadata=dict(metadata))
        return block_item(block, "blocks.update")

    def delete(self, store_id: str) -> None:
        if "/" in store_id:
            container, passage = split_passage_id(store_id)
            if container.startswith("agent-"):
                with converted("agents.passages.delete"):
                    self.client.agents.passages.delete(passage, agent_id=container)
            else:
                with converted("archives.passages.delete"):
                    self.client.archives.passages.delete(passage, archive_id=container)
            return
        with converted("blocks.delete"):
            self.client.blocks.delete(store_id)


def omit() -> Any:
    return letta_client.omit


def rank(query: str, items: list[StoreItem]) -> list[StoreItem]:
    """Items sharing at least one word with the query, most shared first (stable)."""
    from firewall.text import query_terms

    terms = set(query_terms(query))
    scored = [(len(terms & set(query_terms(i.text))), n, i) for n, i in enumerate(items)]
    return [i for s, _, i in sorted(scored, key=lambda t: (-t[0], t[1])) if s > 0]


# -- the guarded clients ---------------------------------------------------------------------


class _Refusing(Refusing):
    _store = STORE


class _Core:
    """The firewall side shared by the sync and async resources."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.guard: Guard = adapter._guard

    def checked(self, call: str, metadata: Any) -> dict[str, Any]:
        given = None if _omitted(metadata) else metadata
        return merged_metadata(STORE, call, MetadataLimits(), given)

    def begin(
        self, call: str, text: Any, metadata: Any, origin: WriteOrigin | None
    ) -> PendingWrite:
        if not isinstance(text, str):
            raise StoreCallError(
                f"text must be a string, got {type(text).__name__}", store=STORE, call=call
            )
        return self.guard.begin_write(text, self.checked(call, metadata), origin=origin)

    def failed(self, pending: PendingWrite, exc: BaseException, call: str) -> None:
        self.guard.fail_write(pending, exc, call)

    @contextmanager
    def writing(self, pending: PendingWrite, call: str) -> Iterator[None]:
        """The store half of a write: if the SDK call fails, the binding is marked failed."""
        try:
            yield
        except AdapterError as exc:
            self.failed(pending, exc, call)
            raise

    def screen(self, items: list[StoreItem], query: str, k: int) -> list[Screened]:
        return self.guard.screen(items, query=query, k=max(1, min(k, 200)))

    def passed(self, items: list[StoreItem], query: str) -> list[Any]:
        """The hits that passed, annotated; ``.gnomon`` says what was withheld and why."""
        hits = self.screen(items, query, len(items))
        return attach([annotate(s) for s in hits if s.passed], hits.summary)

    def one_block(self, item: StoreItem, query: str) -> BlockResponse:
        (screened,) = self.screen([item], query, 1)
        return annotate(screened) if screened.passed else redacted(screened)  # type: ignore[no-any-return]

    def bound_block(self, store_id: str) -> bool:
        return bool(self.guard.wall.store.bindings_by_store_id(STORE, [store_id]))


def _run(call: str, fn: Callable[[], T]) -> T:
    with converted(call):
        return fn()


async def _arun(call: str, fn: Callable[[], Awaitable[T]]) -> T:
    with converted(call):
        return await fn()


# sync resources


class AgentBlocks(_Refusing):
    _path = "agents.blocks."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    def retrieve(self, block_label: str, *, agent_id: str, **kw: Any) -> BlockResponse:
        call = "agents.blocks.retrieve"
        block = _run(call, lambda: self._raw.retrieve(block_label, agent_id=agent_id, **kw))
        item = block_item(block, call, {"agent_id": agent_id, "label": block_label})
        return self._core.one_block(item, f"{call} {agent_id}/{block_label}")

    def update(
        self,
        block_label: str,
        *,
        agent_id: str,
        value: Any = letta_client.omit,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        """A new value is a revision, authored by the agent (inheriting its session's label)."""
        call = "agents.blocks.update"
        scope = {"agent_id": agent_id, "label": block_label}
        checked = self._core.checked(call, metadata)
        if _omitted(value):
            block = _run(
                call,
                lambda: self._raw.update(block_label, agent_id=agent_id, metadata=checked, **kw),
            )
            return self._core.one_block(block_item(block, call, scope), call)
        current = block_item(
            _run(call, lambda: self._raw.retrieve(block_label, agent_id=agent_id)), call, scope
        )
        pending, _ = self._core.guard.begin_update(
            current.store_id, value, checked, origin=gnomon_origin, call=call
        )
        with self._core.writing(pending, call):
            block = _run(
                call,
                lambda: self._raw.update(
                    block_label, agent_id=agent_id, value=pending.text,
                    metadata=pending.metadata, **kw,
                ),
            )  # fmt: skip
            item = block_item(block, call, scope)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    def list(self, agent_id: str, **kw: Any) -> SyncArrayPage[BlockResponse]:
        call = "agents.blocks.list"
        blocks = _run(call, lambda: _listed(self._raw.list(agent_id, **kw), call))
        items = [block_item(b, call, {"agent_id": agent_id}) for b in blocks]
        return screened_page(self._core.passed(items, call))


class AgentPassages(_Refusing):
    _path = "agents.passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    def create(
        self,
        agent_id: str,
        *,
        text: str,
        tags: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> list[Passage]:
        call = "agents.passages.create"
        pending = self._core.begin(call, text, None, gnomon_origin)
        user_tags = [] if _omitted(tags) else [t for t in tags if not t.startswith(TAG_PREFIX)]
        all_tags = [*user_tags, belief_tag(pending.belief.id)]
        with self._core.writing(pending, call):
            made = _run(
                call, lambda: self._raw.create(agent_id, text=pending.text, tags=all_tags, **kw)
            )
            if not isinstance(made, list) or len(made) != 1:
                raise _malformed(call, "a list of one passage", made)
            item = passage_item(made[0], agent_id, call)
        self._core.guard.confirm_write(pending, item.store_id)
        return [item.raw]

    def list(self, agent_id: str, **kw: Any) -> list[Passage]:
        call = "agents.passages.list"
        found = _run(call, lambda: self._raw.list(agent_id, **kw))
        if not isinstance(found, list):
            raise _malformed(call, "a list of passages", found)
        items = [passage_item(p, agent_id, call) for p in found]
        return self._core.passed(items, f"{call} {kw.get('search') or ''}".strip())

    def search(self, agent_id: str, *, query: str, **kw: Any) -> Any:
        call = "agents.passages.search"
        found = _run(call, lambda: self._raw.search(agent_id, query=query, **kw))
        results = getattr(found, "results", None)
        if not isinstance(results, list):
            raise _malformed(call, "a search response with results", found)
        items = [search_result_item(r, agent_id, call) for r in results]
        kept = self._core.passed(items, query)
        return found.model_copy(update={"results": kept, "count": len(kept), "gnomon": kept.gnomon})

    def delete(
        self,
        memory_id: str,
        *,
        agent_id: str,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> object:
        call = "agents.passages.delete"
        store_id = passage_store_id(agent_id, memory_id)
        binding = self._core.guard.begin_delete(store_id, origin=gnomon_origin, call=call)
        try:
            return _run(call, lambda: self._raw.delete(memory_id, agent_id=agent_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise


class Agents(_Refusing):
    _path = "agents."

    def __init__(self, core: _Core, raw: Any) -> None:
        self.blocks = AgentBlocks(core, raw.blocks)
        self.passages = AgentPassages(core, raw.passages)


class Blocks(_Refusing):
    _path = "blocks."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    def create(
        self,
        *,
        label: str,
        value: str,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        call = "blocks.create"
        pending = self._core.begin(call, value, metadata, gnomon_origin)
        with self._core.writing(pending, call):
            block = _run(
                call,
                lambda: self._raw.create(
                    label=label, value=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = block_item(block, call)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    def retrieve(self, block_id: str, **kw: Any) -> BlockResponse:
        call = "blocks.retrieve"
        block = _run(call, lambda: self._raw.retrieve(block_id, **kw))
        return self._core.one_block(block_item(block, call), f"{call} {block_id}")

    def update(
        self,
        block_id: str,
        *,
        value: Any = letta_client.omit,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        call = "blocks.update"
        checked = self._core.checked(call, metadata)
        if _omitted(value):
            block = _run(call, lambda: self._raw.update(block_id, metadata=checked, **kw))
            return self._core.one_block(block_item(block, call), call)
        pending, _ = self._core.guard.begin_update(
            block_id, value, checked, origin=gnomon_origin, call=call
        )
        with self._core.writing(pending, call):
            block = _run(
                call,
                lambda: self._raw.update(
                    block_id, value=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = block_item(block, call)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    def delete(
        self, block_id: str, *, gnomon_origin: WriteOrigin | None = None, **kw: Any
    ) -> object:
        call = "blocks.delete"
        binding = self._core.guard.begin_delete(block_id, origin=gnomon_origin, call=call)
        try:
            return _run(call, lambda: self._raw.delete(block_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise

    def list(self, **kw: Any) -> SyncArrayPage[BlockResponse]:
        call = "blocks.list"
        blocks = _run(call, lambda: _listed(self._raw.list(**kw), call))
        items = [block_item(b, call) for b in blocks]
        return screened_page(self._core.passed(items, f"{call} {kw.get('value_search') or ''}"))


class ArchivePassages(_Refusing):
    _path = "archives.passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    def create(
        self,
        archive_id: str,
        *,
        text: str,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> Passage:
        call = "archives.passages.create"
        pending = self._core.begin(call, text, metadata, gnomon_origin)
        with self._core.writing(pending, call):
            made = _run(
                call,
                lambda: self._raw.create(
                    archive_id, text=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = passage_item(made, archive_id, call)
        self._core.guard.confirm_write(pending, item.store_id)
        return item.raw  # type: ignore[no-any-return]

    def delete(
        self,
        passage_id: str,
        *,
        archive_id: str,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> None:
        call = "archives.passages.delete"
        binding = self._core.guard.begin_delete(
            passage_store_id(archive_id, passage_id), origin=gnomon_origin, call=call
        )
        try:
            _run(call, lambda: self._raw.delete(passage_id, archive_id=archive_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise


class Archives(_Refusing):
    _path = "archives."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._raw = raw
        self.passages = ArchivePassages(core, raw.passages)

    def create(self, *, name: str, **kw: Any) -> Any:
        """An empty container: nothing to record until passages are written into it."""
        return _run("archives.create", lambda: self._raw.create(name=name, **kw))


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
        items.append(StoreItem(item.store_id, item.text, item.metadata, scope=item.scope, raw=hit))
    return items


class Passages(_Refusing):
    _path = "passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    def search(self, **kw: Any) -> list[Any]:
        call = "passages.search"
        hits = _run(call, lambda: self._raw.search(**kw))
        agent = kw.get("agent_id")
        items = _search_hit_items(hits, call, None if _omitted(agent) else agent)
        return self._core.passed(items, str(kw.get("query") or ""))


# async resources (the same phases, the raw call awaited)


class AsyncAgentBlocks(_Refusing):
    _path = "agents.blocks."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    async def retrieve(self, block_label: str, *, agent_id: str, **kw: Any) -> BlockResponse:
        call = "agents.blocks.retrieve"
        block = await _arun(call, lambda: self._raw.retrieve(block_label, agent_id=agent_id, **kw))
        item = block_item(block, call, {"agent_id": agent_id, "label": block_label})
        return self._core.one_block(item, f"{call} {agent_id}/{block_label}")

    async def update(
        self,
        block_label: str,
        *,
        agent_id: str,
        value: Any = letta_client.omit,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        """A new value is a revision, authored by the agent (inheriting its session's label)."""
        call = "agents.blocks.update"
        scope = {"agent_id": agent_id, "label": block_label}
        checked = self._core.checked(call, metadata)
        if _omitted(value):
            block = await _arun(
                call,
                lambda: self._raw.update(block_label, agent_id=agent_id, metadata=checked, **kw),
            )
            return self._core.one_block(block_item(block, call, scope), call)
        current = block_item(
            await _arun(call, lambda: self._raw.retrieve(block_label, agent_id=agent_id)),
            call,
            scope,
        )
        pending, _ = self._core.guard.begin_update(
            current.store_id, value, checked, origin=gnomon_origin, call=call
        )
        with self._core.writing(pending, call):
            block = await _arun(
                call,
                lambda: self._raw.update(
                    block_label, agent_id=agent_id, value=pending.text,
                    metadata=pending.metadata, **kw,
                ),
            )  # fmt: skip
            item = block_item(block, call, scope)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    def list(self, agent_id: str, **kw: Any) -> ScreenedAsyncList:
        call = "agents.blocks.list"

        async def load() -> list[Any]:
            blocks = await _arun(call, lambda: _alisted(self._raw.list(agent_id, **kw), call))
            items = [block_item(b, call, {"agent_id": agent_id}) for b in blocks]
            return self._core.passed(items, call)

        return ScreenedAsyncList(load)


class AsyncAgentPassages(_Refusing):
    _path = "agents.passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    async def create(
        self,
        agent_id: str,
        *,
        text: str,
        tags: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> list[Passage]:
        call = "agents.passages.create"
        pending = self._core.begin(call, text, None, gnomon_origin)
        user_tags = [] if _omitted(tags) else [t for t in tags if not t.startswith(TAG_PREFIX)]
        all_tags = [*user_tags, belief_tag(pending.belief.id)]
        with self._core.writing(pending, call):
            made = await _arun(
                call, lambda: self._raw.create(agent_id, text=pending.text, tags=all_tags, **kw)
            )
            if not isinstance(made, list) or len(made) != 1:
                raise _malformed(call, "a list of one passage", made)
            item = passage_item(made[0], agent_id, call)
        self._core.guard.confirm_write(pending, item.store_id)
        return [item.raw]

    async def list(self, agent_id: str, **kw: Any) -> list[Passage]:
        call = "agents.passages.list"
        found = await _arun(call, lambda: self._raw.list(agent_id, **kw))
        if not isinstance(found, list):
            raise _malformed(call, "a list of passages", found)
        items = [passage_item(p, agent_id, call) for p in found]
        return self._core.passed(items, f"{call} {kw.get('search') or ''}".strip())

    async def search(self, agent_id: str, *, query: str, **kw: Any) -> Any:
        call = "agents.passages.search"
        found = await _arun(call, lambda: self._raw.search(agent_id, query=query, **kw))
        results = getattr(found, "results", None)
        if not isinstance(results, list):
            raise _malformed(call, "a search response with results", found)
        items = [search_result_item(r, agent_id, call) for r in results]
        kept = self._core.passed(items, query)
        return found.model_copy(update={"results": kept, "count": len(kept), "gnomon": kept.gnomon})

    async def delete(
        self,
        memory_id: str,
        *,
        agent_id: str,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> object:
        call = "agents.passages.delete"
        store_id = passage_store_id(agent_id, memory_id)
        binding = self._core.guard.begin_delete(store_id, origin=gnomon_origin, call=call)
        try:
            return await _arun(call, lambda: self._raw.delete(memory_id, agent_id=agent_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise


class AsyncAgents(_Refusing):
    _path = "agents."

    def __init__(self, core: _Core, raw: Any) -> None:
        self.blocks = AsyncAgentBlocks(core, raw.blocks)
        self.passages = AsyncAgentPassages(core, raw.passages)


class AsyncBlocks(_Refusing):
    _path = "blocks."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    async def create(
        self,
        *,
        label: str,
        value: str,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        call = "blocks.create"
        pending = self._core.begin(call, value, metadata, gnomon_origin)
        with self._core.writing(pending, call):
            block = await _arun(
                call,
                lambda: self._raw.create(
                    label=label, value=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = block_item(block, call)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    async def retrieve(self, block_id: str, **kw: Any) -> BlockResponse:
        call = "blocks.retrieve"
        block = await _arun(call, lambda: self._raw.retrieve(block_id, **kw))
        return self._core.one_block(block_item(block, call), f"{call} {block_id}")

    async def update(
        self,
        block_id: str,
        *,
        value: Any = letta_client.omit,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> BlockResponse:
        call = "blocks.update"
        checked = self._core.checked(call, metadata)
        if _omitted(value):
            block = await _arun(call, lambda: self._raw.update(block_id, metadata=checked, **kw))
            return self._core.one_block(block_item(block, call), call)
        pending, _ = self._core.guard.begin_update(
            block_id, value, checked, origin=gnomon_origin, call=call
        )
        with self._core.writing(pending, call):
            block = await _arun(
                call,
                lambda: self._raw.update(
                    block_id, value=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = block_item(block, call)
        self._core.guard.confirm_write(pending, item.store_id, stored=item)
        return self._core.one_block(item, call)

    async def delete(
        self, block_id: str, *, gnomon_origin: WriteOrigin | None = None, **kw: Any
    ) -> object:
        call = "blocks.delete"
        binding = self._core.guard.begin_delete(block_id, origin=gnomon_origin, call=call)
        try:
            return await _arun(call, lambda: self._raw.delete(block_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise

    def list(self, **kw: Any) -> ScreenedAsyncList:
        call = "blocks.list"

        async def load() -> list[Any]:
            blocks = await _arun(call, lambda: _alisted(self._raw.list(**kw), call))
            items = [block_item(b, call) for b in blocks]
            return self._core.passed(items, f"{call} {kw.get('value_search') or ''}")

        return ScreenedAsyncList(load)


class AsyncArchivePassages(_Refusing):
    _path = "archives.passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    async def create(
        self,
        archive_id: str,
        *,
        text: str,
        metadata: Any = letta_client.omit,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> Passage:
        call = "archives.passages.create"
        pending = self._core.begin(call, text, metadata, gnomon_origin)
        with self._core.writing(pending, call):
            made = await _arun(
                call,
                lambda: self._raw.create(
                    archive_id, text=pending.text, metadata=pending.metadata, **kw
                ),
            )
            item = passage_item(made, archive_id, call)
        self._core.guard.confirm_write(pending, item.store_id)
        return item.raw  # type: ignore[no-any-return]

    async def delete(
        self,
        passage_id: str,
        *,
        archive_id: str,
        gnomon_origin: WriteOrigin | None = None,
        **kw: Any,
    ) -> None:
        call = "archives.passages.delete"
        binding = self._core.guard.begin_delete(
            passage_store_id(archive_id, passage_id), origin=gnomon_origin, call=call
        )
        try:
            await _arun(call, lambda: self._raw.delete(passage_id, archive_id=archive_id, **kw))
        except AdapterError as exc:
            if binding is not None:
                self._core.guard.fail_delete(binding, exc, call)
            raise


class AsyncArchives(_Refusing):
    _path = "archives."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._raw = raw
        self.passages = AsyncArchivePassages(core, raw.passages)

    async def create(self, *, name: str, **kw: Any) -> Any:
        """An empty container: nothing to record until passages are written into it."""
        return await _arun("archives.create", lambda: self._raw.create(name=name, **kw))


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
        items.append(StoreItem(item.store_id, item.text, item.metadata, scope=item.scope, raw=hit))
    return items


class AsyncPassages(_Refusing):
    _path = "passages."

    def __init__(self, core: _Core, raw: Any) -> None:
        self._core, self._raw = core, raw

    async def search(self, **kw: Any) -> list[Any]:
        call = "passages.search"
        hits = await _arun(call, lambda: self._raw.search(**kw))
        agent = kw.get("agent_id")
        items = _search_hit_items(hits, call, None if _omitted(agent) else agent)
        return self._core.passed(items, str(kw.get("query") or ""))


class GuardedLetta(_Refusing):
    """A ``letta_client.Letta`` behind the firewall (see the module docstring).

    ``gnomon_origin=`` on a write (host code only) records it with an explicit origin, e.g.
    ``Origin.user("alice")`` for a block the user dictated; without it a write is the agent's.
    ``client.gnomon`` is the store-independent :class:`~adapters.adapter.Adapter` (audit,
    import, export, sync).
    """

    def __init__(
        self,
        client: Letta,
        wall: Firewall,
        *,
        project: str | None = None,
        actor: str = "agent",
        user: str | None = None,
        session: Session | None = None,
        policy: ContextPolicy | str = "default",
        user_channel: Channel | None = None,
    ) -> None:
        if not isinstance(client, Letta):
            raise StoreCallError(
                f"expected a letta_client.Letta, got {type(client).__name__}",
                store=STORE,
                call="__init__",
                hint="use GuardedAsyncLetta for AsyncLetta",
            )
        guard = Guard(
            wall,
            STORE,
            session=session,
            project=project,
            actor=actor,
            user=user,
            policy=policy,
            user_channel=user_channel,
        )
        self.gnomon = Adapter(guard, LettaBackend(client))
        core = _Core(self.gnomon)
        self.agents = Agents(core, client.agents)
        self.blocks = Blocks(core, client.blocks)
        self.archives = Archives(core, client.archives)
        self.passages = Passages(core, client.passages)

    def close(self) -> None:
        self.gnomon.close()


class GuardedAsyncLetta(_Refusing):
    """A ``letta_client.AsyncLetta`` behind the firewall: :class:`GuardedLetta`'s surface with
    the SDK's coroutines (``await client.blocks.create(...)``; ``list`` is awaitable and
    async-iterable like the SDK's paginator). Firewall records are written synchronously
    around each awaited call."""

    def __init__(
        self,
        client: AsyncLetta,
        wall: Firewall,
        *,
        project: str | None = None,
        actor: str = "agent",
        user: str | None = None,
        session: Session | None = None,
        policy: ContextPolicy | str = "default",
        user_channel: Channel | None = None,
    ) -> None:
        if not isinstance(client, AsyncLetta):
            raise StoreCallError(
                f"expected a letta_client.AsyncLetta, got {type(client).__name__}",
                store=STORE,
                call="__init__",
                hint="use GuardedLetta for Letta",
            )
        guard = Guard(
            wall,
            STORE,
            session=session,
            project=project,
            actor=actor,
            user=user,
            policy=policy,
            user_channel=user_channel,
        )
        # The contract backend (audit, import, export, sync) needs a sync client: one sharing
        # the async client's configuration.
        sync = Letta(
            api_key=client.api_key,
            base_url=client.base_url,
            max_retries=client.max_retries,
            timeout=client.timeout,
            default_headers=dict(client._custom_headers),
        )
        self.gnomon = Adapter(guard, LettaBackend(sync))
        core = _Core(self.gnomon)
        self.agents = AsyncAgents(core, client.agents)
        self.blocks = AsyncBlocks(core, client.blocks)
        self.archives = AsyncArchives(core, client.archives)
        self.passages = AsyncPassages(core, client.passages)

    async def close(self) -> None:
        """Async like the rest: the guard's session end runs off the event loop."""
        await asyncio.to_thread(self.gnomon.close)


__all__ = [
    "GNOMON_KEYS",
    "GuardedAsyncLetta",
    "GuardedLetta",
    "LettaBackend",
    "belief_tag",
]
