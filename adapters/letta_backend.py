"""The store-specific half of the Letta adapter: the error edge, SDK objects as store items,
pages, and :class:`LettaBackend` (the contract backend). :mod:`adapters.letta` builds the guarded
clients on top, :mod:`adapters.letta_loop` the guarded agent loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from gnomon.adapters.errors import sdk_imports

with sdk_imports("letta", "letta-client"):
    import letta_client
    from letta_client import Letta
    from letta_client._base_client import AsyncPaginator
    from letta_client.pagination import AsyncArrayPage, SyncArrayPage
    from letta_client.types import BlockResponse, Passage

from gnomon.adapters.base import (
    BELIEF_KEY,
    MetadataLimits,
    Page,
    StoreBackend,
    StoreItem,
    earlier,
    rendered_value,
)
from gnomon.adapters.errors import (
    AdapterError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
    malformed,
    status_hint,
)
from gnomon.adapters.withheld import attach
from gnomon.firewall.model.chain import content_hash

STORE = "letta"
TAG_PREFIX = "gnomon:"
DEFAULT_LABEL = "memory"


def belief_tag(belief_id: str) -> str:
    """The tag that carries a belief id on an agent archival passage.

    >>> belief_tag("bel_1")
    'gnomon:bel_1'
    """
    return f"{TAG_PREFIX}{belief_id}"


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


#: What a write of a block may set beside its value and metadata (each rendered).
BLOCK_FIELDS = ("label", "description", "tags", "template_name")


def block_item(block: Any, call: str, scope: Mapping[str, str] | None = None) -> StoreItem:
    ident, value = getattr(block, "id", None), getattr(block, "value", None)
    if not isinstance(block, BlockResponse) or not isinstance(ident, str):
        raise _malformed(call, "a block with an id", block)
    if not isinstance(value, str):
        raise _malformed(call, "a block with a string value", block)
    metadata = getattr(block, "metadata", None)
    rendered = {
        "label": rendered_value(block.label),
        "description": rendered_value(getattr(block, "description", None)),
        **beside_fields(metadata=metadata, tags=block.tags, template_name=block.template_name),
    }
    return StoreItem(
        store_id=ident,
        text=value,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        scope=dict(scope or ({"label": block.label} if block.label else {})),
        raw=block,
        # a block reaches the caller (and the agent's core memory) with its label and
        # description next to its value, and its metadata, tags and template name beside it:
        # the hash covers them (before it covered label and description alone)
        rendered=rendered,
        earlier_hashes=earlier(value, rendered, ("label", "description")),
        text_field="value",
    )


def passage_store_id(container: str, passage_id: str) -> str:
    return f"{container}/{passage_id}"


def split_passage_id(store_id: str) -> tuple[str, str]:
    container, _, passage = store_id.partition("/")
    return container, passage


def _tag_metadata(tags: Sequence[str] | None) -> dict[str, Any]:
    found = [t[len(TAG_PREFIX) :] for t in tags or () if t.startswith(TAG_PREFIX)]
    return {BELIEF_KEY: found[0]} if found else {}


def beside_fields(**shown: Any) -> dict[str, str]:
    """Free-form fields that reach the caller beside an item's text (a passage's or block's
    metadata and tags, a passage's file name), as rendered fields, so the binding's hash covers
    them (an edit around the firewall is drift). Each is rendered only where the item has one:
    an agent passage's search result (tags, no metadata) and the passage listed render the
    same. Before they were covered, a passage's hash was its text's alone
    (:attr:`StoreItem.earlier_hashes`)."""
    return {k: rendered_value(v) for k, v in shown.items() if v}


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
        rendered=beside_fields(
            metadata=passage.metadata, tags=passage.tags, file_name=passage.file_name
        ),
        text_field="text",
        earlier_hashes=(content_hash(text),),
    )


def search_result_item(result: Any, agent_id: str, call: str) -> StoreItem:
    ident, text = getattr(result, "id", None), getattr(result, "content", None)
    if not isinstance(ident, str) or not isinstance(text, str):
        raise _malformed(call, "a search result with an id and content", result)
    tags = getattr(result, "tags", None)
    return StoreItem(
        store_id=passage_store_id(agent_id, ident),
        text=text,
        metadata=_tag_metadata(tags),
        scope={"agent_id": agent_id},
        raw=result,
        rendered=beside_fields(tags=tags),
        text_field="content",
        earlier_hashes=(content_hash(text),),
    )


def listed(page: Any, call: str) -> Any:
    """Every item of an array page, fetching the following pages (``?after=``); for the async
    SDK's paginator, a coroutine doing the same. A page whose body was not a JSON array comes
    back from the SDK with ``items=None``: refused."""
    if isinstance(page, AsyncPaginator):
        return _alisted(page, call)
    if not isinstance(page, SyncArrayPage):
        raise malformed(STORE, call, "an array page", page)
    return _items([one.items for one in page.iter_pages()], call)


async def _alisted(paginator: Any, call: str) -> list[Any]:
    return _items([one.items async for one in (await paginator).iter_pages()], call)


def _items(pages: list[Any], call: str) -> list[Any]:
    for items in pages:
        if not isinstance(items, list):
            raise malformed(STORE, call, "a JSON array of items", items)
    return [item for items in pages for item in items]


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

    def sent(self, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, str]:
        if "archive_id" in scope:
            return {}
        if "agent_id" in scope and "label" not in scope:
            return {"tags": rendered_value(self._tags(metadata))}
        return {"label": rendered_value(scope.get("label", DEFAULT_LABEL))}

    @staticmethod
    def _tags(metadata: Mapping[str, Any]) -> list[str]:
        return [belief_tag(metadata[BELIEF_KEY])] if BELIEF_KEY in metadata else []

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
            tags = self._tags(metadata)
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
    from gnomon.firewall.model.text import query_terms

    terms = set(query_terms(query))
    scored = [(len(terms & set(query_terms(i.text))), n, i) for n, i in enumerate(items)]
    return [i for s, _, i in sorted(scored, key=lambda t: (-t[0], t[1])) if s > 0]
