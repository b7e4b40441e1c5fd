"""The adapter contract: what every memory-store adapter provides, and what it gets for free.

An adapter has two halves:

* a :class:`StoreBackend`, the only store-specific part: it turns the SDK's items into
  :class:`StoreItem` values and makes the raw calls (write, get, search, list a page, update,
  delete, history) against the live client, converting the SDK's errors into
  :mod:`adapters.errors` types that name the store and the call;
* a :class:`~adapters.guard.Guard`, shared by every adapter, which does the firewall side: the
  write path (origin, claim, evidence, belief, then a ``pending`` binding, then the store write,
  then ``written`` or ``failed``), the read path (hits mapped to beliefs through bindings,
  unknown hits recorded as external, drift flagged, the ContextPolicy applied with the core's own
  evaluation), update and delete as revisions, and the audit path. Import, export and sync
  (:mod:`adapters.transfer`) walk a backend through the same guard.

The SDK-shaped wrappers (``GuardedMemory`` for mem0, ``GuardedLocalMemory``, …) keep the SDK's
method names, signatures and return shapes and call the guard around each raw call; any other
public SDK method is refused (:class:`~adapters.errors.BypassRefusedError`), never passed through.

Metadata the firewall writes into the store (:func:`gnomon_metadata`): four scalar keys,
``gnomon_belief_id``, ``gnomon_origin`` (the origin ids, comma-separated), ``gnomon_integrity``
and ``gnomon_hash`` (the hash of the text alone; the binding's own hash also covers the
item's other rendered fields, see :attr:`StoreItem.rendered`). They are informational for
people reading the store: the firewall itself trusts only its bindings (store id → belief),
since anyone can write those keys into the store.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from gnomon.adapters.errors import StoreMetadataError
from gnomon.firewall.model.chain import Belief, content_hash

#: Metadata keys the firewall writes; a caller may not set them.
BELIEF_KEY = "gnomon_belief_id"
ORIGIN_KEY = "gnomon_origin"
INTEGRITY_KEY = "gnomon_integrity"
HASH_KEY = "gnomon_hash"
GNOMON_KEYS = (BELIEF_KEY, ORIGIN_KEY, INTEGRITY_KEY, HASH_KEY)

Scalar = str | int | float | bool


@dataclass(frozen=True, slots=True)
class StoreItem:
    """One memory as a store holds it, normalized from the SDK's own shape.

    ``scope`` holds the store's partition keys (mem0's ``user_id``/``agent_id``/``run_id``, a
    Letta agent id, a Zep thread), ``raw`` the SDK's object, returned to callers unchanged
    apart from the ``gnomon`` annotation.

    ``rendered`` holds every other field of the item that reaches a caller next to ``text``
    (a Zep edge's ``name`` and validity dates, a Letta block's ``label``, mem0's caller
    metadata). :attr:`content_hash` covers them all, so an edit of any rendered field around
    the firewall is drift, never trusted.

    ``text_field`` names the field of ``raw`` that holds ``text`` (mem0's ``memory``, a Letta
    block's ``value``; ``"passage.text"`` for a field of a nested object): a hit the policy
    admits only as quoted data is returned with that
    field wrapped in its ``<quoted-data>`` marker. An item without one is never quoted (the
    label could not be shown where the text is read), only withheld.

    ``earlier_hashes``: the hashes a binding recorded for this item before its adapter
    rendered the fields it renders now, one per earlier version of the adapter (a Zep
    message's text alone, before its role, name and metadata were covered; then those, before
    an episode's source description was). A written binding holding one is not drift: the read
    path moves it to :attr:`content_hash` once, on the record
    (:meth:`adapters.guard.Guard.resolve_items`). :func:`earlier` makes them.
    """

    store_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    scope: Mapping[str, str] = field(default_factory=dict)
    raw: Any = None
    rendered: Mapping[str, str] = field(default_factory=dict)
    text_field: str | None = None
    earlier_hashes: tuple[str, ...] = ()

    @property
    def content_hash(self) -> str:
        return item_hash(self.text, self.rendered)

    @property
    def upgradable_hashes(self) -> tuple[str, ...]:
        """The hashes an earlier adapter recorded for this item: the hash of the fields it
        renders now made the earlier way (:func:`legacy_item_hash`), then each of
        :attr:`earlier_hashes`. None can be a binding the current adapter wrote
        (:func:`item_hash` is domain-tagged ``v2`` even for an item rendering nothing)."""
        return (legacy_item_hash(self.text, self.rendered), *self.earlier_hashes)


#: Domain tag of :func:`item_hash`. ``v2``: every binding the adapters write carries it, so no
#: binding written today equals an earlier adapter's hash (:func:`legacy_item_hash`), and only a
#: binding truly recorded before takes the upgrade path (:attr:`StoreItem.upgradable_hashes`).
ITEM_HASH_DOMAIN = "gnomon.store-item.v2"
#: Domain tag of :func:`legacy_item_hash` (an item rendering fields beyond its text, before v2).
LEGACY_ITEM_HASH_DOMAIN = "gnomon.store-item.v1"


def _tagged(domain: str, text: str, rendered: Mapping[str, str]) -> str:
    canonical = json.dumps(
        [domain, text, sorted(rendered.items())], ensure_ascii=False, separators=(",", ":")
    )
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest}"


def item_hash(text: str, rendered: Mapping[str, str] | None = None) -> str:
    """The hash a binding records for an item: the canonical JSON of the domain tag, the text
    and every rendered field, even when it renders nothing beyond its text (so it never equals
    an earlier adapter's hash of the same item with fewer fields, see
    :attr:`StoreItem.upgradable_hashes`).

    >>> item_hash("tea") != content_hash("tea")
    True
    >>> item_hash("tea", {"label": "human"}) != item_hash("tea", {"label": "persona"})
    True
    """
    return _tagged(ITEM_HASH_DOMAIN, text, rendered or {})


def legacy_item_hash(text: str, rendered: Mapping[str, str] | None = None) -> str:
    """The hash adapters recorded before :data:`ITEM_HASH_DOMAIN` ``v2``: the text's own
    :func:`~firewall.model.chain.content_hash` when the item rendered nothing else, otherwise
    the ``v1`` domain-tagged JSON. Only ever compared, never recorded for a new binding.

    >>> legacy_item_hash("tea") == content_hash("tea")
    True
    """
    return content_hash(text) if not rendered else _tagged(LEGACY_ITEM_HASH_DOMAIN, text, rendered)


def earlier(text: str, rendered: Mapping[str, str], *covered: Sequence[str]) -> tuple[str, ...]:
    """:attr:`StoreItem.earlier_hashes` of an item rendering ``rendered``: for each earlier
    version of its adapter, the hash it recorded (:func:`legacy_item_hash`) of the text and the
    fields that version covered (``covered``, names; ``()``: the text alone)."""
    return tuple(
        legacy_item_hash(text, {k: rendered[k] for k in names if k in rendered})
        for names in covered
    )


def rendered_value(value: Any) -> str:
    """One rendered field as canonical text (None stays distinguishable from "")."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))


def rendered_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The caller's metadata as a rendered field: every key but the firewall's own."""
    mine = {k: v for k, v in metadata.items() if k not in GNOMON_KEYS}
    return {"metadata": rendered_value(mine)} if mine else {}


@dataclass(frozen=True, slots=True)
class MetadataLimits:
    """What a store accepts as metadata. ``None``: no limit on that dimension.

    Zep: at most 10 keys, scalar values (or lists of scalars); Chroma (under mem0): no nested
    dicts; Letta archival passages: tags only (``tags_only``).
    """

    max_keys: int | None = None
    nested: bool = True
    tags_only: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    """One page of :meth:`StoreBackend.list_page`; ``cursor`` is None on the last page."""

    items: list[StoreItem]
    cursor: str | None = None


class StoreBackend(ABC):
    """The store-specific half of an adapter: raw calls against one live client.

    Implementations convert every SDK exception into an :class:`~adapters.errors.AdapterError`
    subclass naming ``self.name`` and the call, and every SDK response into :class:`StoreItem`
    or a :class:`~adapters.errors.StoreResponseError`.
    """

    #: The store's name in bindings, origins and errors ("mem0", "letta", "zep", "local").
    name: ClassVar[str]
    #: The metadata the store accepts.
    limits: ClassVar[MetadataLimits] = MetadataLimits()

    def sent(self, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, str]:
        """The rendered fields (:attr:`StoreItem.rendered`, metadata aside) :meth:`write` sets
        beside the text for ``metadata`` and ``scope``: the item it answers with must hold no
        others."""
        return {}

    @abstractmethod
    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        """Store one memory verbatim (no LLM rewriting) and return it with its store id."""

    @abstractmethod
    def get(self, store_id: str) -> StoreItem | None:
        """The item, or None if the store has no such id."""

    @abstractmethod
    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        """The store's own relevance search, best first."""

    @abstractmethod
    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        """One page of everything the store holds in ``scope``."""

    @abstractmethod
    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem | None:
        """Replace the item's text (and merge metadata); return the item as it now stands, or
        None when the store does not say (its binding then records the text's hash alone).

        A store that cannot edit an item in place (Zep's episodes) deletes it and writes the
        new text as a new item, and returns that item: the binding follows its new store id.
        A store that sets or merges rendered fields (a Letta block's label, mem0's metadata)
        returns the item so the binding's hash covers them.
        """

    @abstractmethod
    def delete(self, store_id: str) -> None:
        """Delete the item."""

    def derived(self, store_id: str) -> bool:
        """True for an item the store derived on its own (Zep's edges and nodes): it comes and
        goes with its sources, so sync never reports it deleted around the firewall."""
        return False

    def store_conflicts(self, scope: Mapping[str, str]) -> tuple[str, ...]:
        """Link the conflicts the store recorded on its own (out of band) through the guard;
        the items linked. Most stores record none."""
        return ()

    def history(self, store_id: str) -> list[dict[str, Any]]:
        """The store's own change history of the item, where it keeps one (mem0 does)."""
        return []

    def walk(self, scope: Mapping[str, str], *, page_size: int = 100) -> Iterator[StoreItem]:
        """Every item in ``scope``, page by page."""
        cursor: str | None = None
        while True:
            page = self.list_page(scope=scope, cursor=cursor, limit=page_size)
            yield from page.items
            if page.cursor is None or not page.items:
                return
            cursor = page.cursor


# -- metadata --------------------------------------------------------------------------------


def gnomon_metadata(belief: Belief, text_hash: str) -> dict[str, Scalar]:
    """The scalar keys the firewall writes next to a memory in the store."""
    return {
        BELIEF_KEY: belief.id,
        ORIGIN_KEY: ",".join(sorted(belief.origin.origin_ids)),
        INTEGRITY_KEY: belief.origin.integrity.name.lower(),
        HASH_KEY: text_hash,
    }


def flatten(metadata: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts become dotted keys (for stores that refuse nesting).

    >>> flatten({"a": {"b": 1, "c": {"d": "x"}}, "e": [1, 2]})
    {'a.b': 1, 'a.c.d': 'x', 'e': [1, 2]}
    """
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def merged_metadata(
    store: str, call: str, limits: MetadataLimits, user: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The caller's metadata checked against the store's limits, leaving room for the
    firewall's keys. Raises :class:`StoreMetadataError` *before* anything is recorded."""
    given = dict(user or {})
    if not all(isinstance(k, str) for k in given):
        raise StoreMetadataError(
            "metadata keys must be strings", store=store, call=call, hint="use string keys"
        )
    clash = sorted(set(given) & set(GNOMON_KEYS))
    if clash:
        raise StoreMetadataError(
            f"metadata keys {', '.join(clash)} are reserved for the firewall",
            store=store,
            call=call,
            hint="rename the keys; the firewall sets gnomon_* itself",
        )
    if not limits.nested:
        given = flatten(given)
    if limits.max_keys is not None and len(given) + len(GNOMON_KEYS) > limits.max_keys:
        room = limits.max_keys - len(GNOMON_KEYS)
        raise StoreMetadataError(
            f"{len(given)} metadata keys given; {store} allows {limits.max_keys} and the "
            f"firewall needs {len(GNOMON_KEYS)}",
            store=store,
            call=call,
            hint=f"pass at most {room} metadata keys",
        )
    if limits.max_keys is not None or not limits.nested:
        for key, value in given.items():
            if not _scalar_or_list(value):
                raise StoreMetadataError(
                    f"metadata value of {key!r} is a {type(value).__name__}; {store} accepts "
                    "strings, numbers, booleans and lists of them",
                    store=store,
                    call=call,
                    hint="convert the value to a string",
                )
    return given


def _scalar_or_list(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(isinstance(v, str | int | float | bool) for v in value)
    return False


__all__ = [
    "BELIEF_KEY",
    "GNOMON_KEYS",
    "HASH_KEY",
    "INTEGRITY_KEY",
    "ITEM_HASH_DOMAIN",
    "LEGACY_ITEM_HASH_DOMAIN",
    "ORIGIN_KEY",
    "MetadataLimits",
    "Page",
    "StoreBackend",
    "StoreItem",
    "earlier",
    "flatten",
    "gnomon_metadata",
    "item_hash",
    "legacy_item_hash",
    "merged_metadata",
    "rendered_metadata",
    "rendered_value",
]
