"""LangGraph's long-term memory behind the firewall: :class:`GuardedStore`, a ``BaseStore``.

``langgraph.store`` (the ``store`` a graph is compiled with, and what LangMem's memory managers
write through) is a key-value store of JSON documents under namespaces. The guarded store wraps
any ``BaseStore`` that answers ``batch`` (``InMemoryStore``, ``PostgresStore``...)::

    store = GuardedStore(InMemoryStore(), wall, project="shop", user="alice")
    graph = builder.compile(store=store)

* **Namespaces are bound to the project and tenant.** Every namespace a caller names is stored
  under ``("gnomon", project, user)`` in the inner store (names escaped into valid labels, see
  :func:`_label`; ``%shared`` for a session with no user); ``list_namespaces`` lists and strips only
  that prefix, so one tenant's graph never reads or lists another's (and a caller cannot name a
  namespace outside its own: it always gets the prefix).
* **Writes** (``put``, ``aput``, and ``PutOp`` in ``batch``) record the document (its canonical
  JSON) with its origin, exactly as the mem0 adapter records a message: the agent joined with
  everything its session has read, unless the host passes ``gnomon_origin=`` to :meth:`put`
  (a host channel, e.g. the user's). The value is stored verbatim; the binding (firewall-side,
  store id ``[namespace, key]``) holds its hash, so an edit of the inner store around the
  firewall is drift. ``put(..., None)`` / ``delete`` are revisions (a lower-integrity delete of
  a supported memory is refused, store untouched).
* **Reads** (``get``, ``search``, and their ops) return only the items the ContextPolicy admits
  or quotes (the drop-in default is ``assistant``): an accepted item's value gains a ``gnomon``
  key with its labels; a quoted one's value is only ``{"quoted_data": "<quoted-data ...>",
  "gnomon": {...}}`` (the document as one escaped line naming its origin). Items a read withholds
  are absent; ``get`` returns None. Contradictions travel in ``gnomon["contradictions"]`` of
  :meth:`contradictions`, as the other adapters' channel.
* ``abatch`` (and so every ``a*`` method) runs the same flow on the guard's worker thread over
  the inner store's sync ``batch``.

Importing this module without langgraph installed raises
:class:`~adapters.errors.MissingSDKError` naming ``pip install 'gnomon[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from gnomon.adapters.errors import sdk_imports

with sdk_imports("langgraph", "langgraph", extra="langgraph"):
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )

from gnomon.adapters.base import Page, StoreBackend, StoreItem
from gnomon.adapters.core import Constructed
from gnomon.adapters.errors import StoreCallError
from gnomon.adapters.guard import Screened
from gnomon.firewall.host.channels import WriteOrigin

STORE = "langgraph"
ROOT = "gnomon"


#: The tenant label of a session with no user (an escaped user name never starts with "%s").
SHARED = "%shared"


def _label(name: str) -> str:
    """A project or user name as one LangGraph namespace label (no periods, never empty, and
    no two names alike): ``%`` and ``.`` escaped."""
    return name.replace("%", "%25").replace(".", "%2E")


def canonical(value: Mapping[str, Any]) -> str:
    """A document's text as the firewall records and hashes it: canonical JSON."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def store_id(namespace: Sequence[str], key: str) -> str:
    """The store id of one document: ``[namespace, key]`` as JSON (no separator to forge)."""
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


def split_id(ident: str) -> tuple[tuple[str, ...], str]:
    try:
        namespace, key = json.loads(ident)
        return tuple(str(n) for n in namespace), str(key)
    except (ValueError, TypeError) as exc:
        raise StoreCallError(f"not a {STORE} store id: {ident!r}", store=STORE, call="get") from exc


def _item(found: Item) -> StoreItem:
    value = found.value if isinstance(found.value, Mapping) else {}
    return StoreItem(
        store_id=store_id(found.namespace, found.key),
        text=canonical(value),
        created_at=found.created_at,
        updated_at=found.updated_at,
        # what a quoted hit shows beside its marker: its namespace and key (checked inert);
        # the document itself is only ever shown inside the marker
        raw={
            "namespace": list(found.namespace),
            "key": found.key,
            "quoted_data": "",
            "item": found,
        },
        text_field="quoted_data",
    )


class LangGraphBackend(StoreBackend):
    """Raw calls against one ``BaseStore``, inside ``prefix`` (scope ``{"namespace": json}``,
    plus ``"key"`` for a write)."""

    name: ClassVar[str] = STORE

    def __init__(self, inner: BaseStore, prefix: tuple[str, ...]) -> None:
        self.inner = inner
        self.prefix = prefix

    def _namespace(self, scope: Mapping[str, str]) -> tuple[str, ...]:
        return (*self.prefix, *json.loads(scope.get("namespace", "[]")))

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        namespace, key = self._namespace(scope), scope["key"]
        index = json.loads(scope["index"]) if "index" in scope else None
        self.inner.put(namespace, key, json.loads(text), index=index)
        found = self.inner.get(namespace, key)
        if found is None:
            raise StoreCallError("the document was not stored", store=STORE, call="put")
        return _item(found)

    def get(self, store_id: str) -> StoreItem | None:
        namespace, key = split_id(store_id)
        if namespace[: len(self.prefix)] != self.prefix:
            return None  # another tenant's namespace: not this client's to read
        found = self.inner.get(namespace, key)
        return None if found is None else _item(found)

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        found = self.inner.search(
            self._namespace(scope),
            query=query or None,
            filter=json.loads(scope["filter"]) if "filter" in scope else None,
            limit=limit,
            offset=int(scope.get("offset", "0")),
        )
        return [_item(f) for f in found]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        offset = int(cursor or "0")
        found = self.inner.search(self._namespace(scope), limit=limit, offset=offset)
        more = str(offset + limit) if len(found) == limit else None
        return Page([_item(f) for f in found], more)

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem:
        namespace, key = split_id(store_id)
        self.inner.put(namespace, key, json.loads(text))
        found = self.inner.get(namespace, key)
        if found is None:
            raise StoreCallError("the document was not stored", store=STORE, call="put")
        return _item(found)

    def delete(self, store_id: str) -> None:
        namespace, key = split_id(store_id)
        self.inner.delete(namespace, key)

    def namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """``list_namespaces`` inside the prefix, the prefix stripped."""
        conditions = op.match_conditions or ()
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        suffix = next((c.path for c in conditions if c.match_type == "suffix"), None)
        depth = None if op.max_depth is None else op.max_depth + len(self.prefix)
        found = self.inner.list_namespaces(
            prefix=(*self.prefix, *prefix),
            suffix=suffix,
            max_depth=depth,
            limit=op.limit,
            offset=op.offset,
        )
        n = len(self.prefix)
        return [tuple(ns[n:]) for ns in found if tuple(ns[:n]) == self.prefix]


class GuardedStore(Constructed, BaseStore):
    """A LangGraph ``BaseStore`` behind the firewall (see the module docstring).

    ``project``, ``user`` (the tenant), ``actor``, ``session``, ``policy`` and ``user_channel``
    are the guarded clients' usual options."""

    _store = STORE

    def _adapter_backend(self, client: Any, sync_client: Any) -> StoreBackend:
        return LangGraphBackend(client, ())  # the tenant prefix is set once the guard exists

    def _mount(self, client: Any) -> None:
        session = self.gnomon._guard.session
        prefix = (ROOT, _label(session.project), _label(session.user) if session.user else SHARED)
        backend = self.gnomon._backend
        assert isinstance(backend, LangGraphBackend)
        backend.prefix = prefix
        self._inner = client

    def _check_client(self, client: Any) -> None:
        if not isinstance(client, BaseStore) or isinstance(client, GuardedStore):
            raise StoreCallError(
                f"GuardedStore wraps a langgraph BaseStore, got {type(client).__name__}",
                store=STORE,
                call="__init__",
                hint="pass InMemoryStore(), PostgresStore(...) or another BaseStore",
            )

    # -- the BaseStore contract ---------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Every op through the firewall, in order."""
        return [self._one(op, None) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on the guard's worker thread (one firewall step at a time)."""
        listed = list(ops)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.gnomon._guard.worker(), self.batch, listed)

    def put(  # type: ignore[override]
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = None,
        gnomon_origin: WriteOrigin | None = None,
    ) -> None:
        """``BaseStore.put``; ``gnomon_origin=`` (host code only) records the document with a
        host channel's origin (the user's) instead of the agent's."""
        self._check_namespace(namespace)
        self._one(PutOp(tuple(namespace), key, value, index), gnomon_origin)

    def contradictions(self, store_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The contradiction channel for the documents ``store_ids`` (``[namespace, key]``)."""
        return self.gnomon.contradictions(ids=list(store_ids))

    # -- the flow -----------------------------------------------------------------------------

    @staticmethod
    def _check_namespace(namespace: Any) -> None:
        if not isinstance(namespace, tuple) or not all(isinstance(n, str) and n for n in namespace):
            raise StoreCallError(
                "a namespace is a tuple of non-empty strings",
                store=STORE,
                call="put",
                hint="e.g. ('memories', 'alice')",
            )

    def _one(self, op: Op, origin: WriteOrigin | None) -> Result:
        if isinstance(op, PutOp):
            self._put(op, origin)
            return None
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self.gnomon.call("list_namespaces", lambda: self._backend.namespaces(op))
        raise StoreCallError(f"unknown store op {type(op).__name__}", store=STORE, call="batch")

    @property
    def _backend(self) -> LangGraphBackend:
        backend = self.gnomon._backend
        assert isinstance(backend, LangGraphBackend)
        return backend

    def _full(self, namespace: Sequence[str], key: str) -> str:
        return store_id((*self._backend.prefix, *namespace), key)

    def _put(self, op: PutOp, origin: WriteOrigin | None) -> None:
        self._check_namespace(op.namespace)
        ident = self._full(op.namespace, op.key)
        if op.value is None:
            if self.gnomon._backend.get(ident) is not None:
                self.gnomon.delete(ident, origin=origin)
            return None
        if not isinstance(op.value, Mapping):
            raise StoreCallError("a document is a dict", store=STORE, call="put")
        text = canonical(op.value)
        if self.gnomon._backend.get(ident) is not None:
            self.gnomon.update(ident, text, origin=origin)
            return None
        scope = {"namespace": json.dumps(list(op.namespace)), "key": op.key}
        if op.index is not None:
            scope["index"] = json.dumps(op.index)
        self.gnomon.write(text, scope=scope, origin=origin, call="put")
        return None

    def _get(self, op: GetOp) -> Item | None:
        screened = self.gnomon.get(self._full(op.namespace, op.key))
        if screened is None or not screened.passed:
            return None
        return _shown(screened, len(self._backend.prefix))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        scope = {"namespace": json.dumps(list(op.namespace_prefix)), "offset": str(op.offset)}
        if op.filter:
            scope["filter"] = json.dumps(op.filter)
        hits = self.gnomon.search(op.query or "", scope=scope, k=op.limit)
        out = []
        for s in hits:
            if not s.passed:
                continue
            shown = _shown(s, len(self._backend.prefix))
            raw = s.item.raw["item"]
            out.append(
                SearchItem(
                    shown.namespace,
                    shown.key,
                    shown.value,
                    shown.created_at,
                    shown.updated_at,
                    getattr(raw, "score", None),
                )
            )
        return out


def _shown(screened: Screened, depth: int) -> Item:
    """An item that passed, as the caller gets it: its namespace without the tenant prefix, its
    value annotated (accepted) or replaced by its quoted-data line (quoted)."""
    raw: Item = screened.item.raw["item"]
    fields = screened.shown()
    if screened.verdict == "quoted":
        value: dict[str, Any] = {
            "quoted_data": fields["quoted_data"],
            "gnomon": fields["gnomon"],
        }
    else:
        value = {**raw.value, "gnomon": fields["gnomon"]}
    return Item(
        value=value,
        key=raw.key,
        namespace=tuple(raw.namespace[depth:]),
        created_at=raw.created_at,
        updated_at=raw.updated_at,
    )


__all__ = ["GuardedStore", "LangGraphBackend"]
