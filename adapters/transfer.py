"""Import, export and sync: what a store already holds, through the one guard.

* **import** walks the store page by page and brings every item in through
  :meth:`Firewall.import_records` (the one import path) with ``bind=True``: each lands unverified
  and restricted with origin ``imported:<store>``, bound to its store id with the hash of its
  text. An item already bound is skipped, so a second import imports nothing.
* **export** writes every belief bound to the store, with its labels and binding, as JSON lines.
* **sync** walks the store and compares it with the bindings: an unknown item was written around
  the firewall (recorded as unbound external), an item whose text no longer matches its hash
  drifted (suspicious, recorded), a bound item the store no longer has was deleted around the
  firewall (binding ``deleted``, belief hidden). Each finding is an event.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING

import orjson

from gnomon.adapters.base import StoreItem
from gnomon.firewall.gate.policy import floor_reasons
from gnomon.firewall.host.firewall import Firewall, ImportItem
from gnomon.firewall.model.chain import BindingState

if TYPE_CHECKING:
    from collections.abc import Callable

    from gnomon.adapters.adapter import Adapter


@dataclass(frozen=True, slots=True)
class ImportReport:
    seen: int
    imported: int

    @property
    def skipped(self) -> int:
        return self.seen - self.imported


@dataclass(frozen=True, slots=True)
class SyncReport:
    seen: int
    unbound: tuple[str, ...]
    drifted: tuple[str, ...]
    deleted: tuple[str, ...]
    #: items the store itself marked as replaced (Zep's invalidations), now linked by origin
    conflicts: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.unbound or self.drifted or self.deleted)


@contextmanager
def _progress(label: str, enabled: bool | None) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar on a terminal (stderr), nothing otherwise."""
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda n: bar.advance(task, n)


def import_items(
    wall: Firewall,
    store: str,
    items: Iterable[StoreItem],
    *,
    project: str,
    batch_size: int = 1000,
    progress: bool | None = None,
) -> ImportReport:
    """Import normalized items (from a live store or an export file), idempotently."""
    seen = 0

    def counted() -> Iterator[ImportItem]:
        nonlocal seen
        for item in items:
            seen += 1
            yield ImportItem(
                text=item.text,
                source_id=item.store_id,
                created_at=item.created_at,
                content_hash=item.content_hash,
            )

    with _progress(f"importing from {store}", progress) as advance:
        imported = wall.import_records(
            counted(),
            store_name=store,
            project=project,
            batch_size=batch_size,
            bind=True,
            progress=advance,
        )
    return ImportReport(seen=seen, imported=imported)


def import_store(
    adapter: Adapter,
    scope: Mapping[str, str],
    *,
    batch_size: int = 1000,
    page_size: int = 100,
    progress: bool | None = None,
) -> ImportReport:
    """Import everything ``scope`` holds in the adapter's store, into the client's own project
    (an agent-facing client cannot import into another tenant)."""
    guard = adapter._guard
    return import_items(
        guard.wall,
        adapter.store,
        adapter.call("list", lambda: list(adapter._backend.walk(scope, page_size=page_size))),
        project=guard.session.project,
        batch_size=batch_size,
        progress=progress,
    )


def export_store(adapter: Adapter, out: IO[str] | str | Path, *, page_size: int = 1000) -> int:
    """Every belief of the client's project bound to the store, with its labels and binding,
    as JSON lines; beliefs in a privileged state (quarantined, hidden...) stay on the audit path."""
    guard = adapter._guard
    return export_bindings(
        guard.wall, adapter.store, out, page_size=page_size, reader=guard.session.project
    )


def export_bindings(
    wall: Firewall,
    store_name: str,
    out: IO[str] | str | Path,
    *,
    page_size: int = 1000,
    reader: str | None = None,
) -> int:
    """:func:`export_store` from the firewall's bindings alone (no client for the store needed).

    ``reader``: the project of an agent-facing export, which gets only that project's beliefs
    and none in a privileged state; the host's export (``None``) gets every belief."""
    count = 0
    with _sink(out) as sink:
        after: str | None = None
        while True:
            page = wall.store.list_bindings(store_name, after=after, limit=page_size)
            if not page:
                break
            beliefs = wall.store.get_beliefs([b.belief_id for b in page])
            for binding in page:
                belief = beliefs.get(binding.belief_id)
                if belief is None or (
                    reader is not None and (belief.project != reader or floor_reasons(belief))
                ):
                    continue
                record = {
                    "store": binding.store,
                    "store_id": binding.store_id,
                    "binding": binding.state.value,
                    "content_hash": binding.content_hash,
                    "belief_id": belief.id,
                    "text": belief.statement,
                    "truth": belief.truth_status.value,
                    "retrieval": belief.retrieval_status.value,
                    "security": belief.security_status.value,
                    "freshness": belief.freshness_status.value,
                    "sensitivity": belief.sensitivity.value,
                    "origin": belief.origin.json_dict(),
                    "observed_at": belief.observed_at.isoformat(),
                }
                sink.write(orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode() + "\n")
                count += 1
            after = page[-1].belief_id
    return count


@contextmanager
def _sink(out: IO[str] | str | Path) -> Iterator[IO[str]]:
    if isinstance(out, str | Path):
        with open(out, "w", encoding="utf-8") as handle:
            yield handle
    else:
        yield out


def sync_store(
    adapter: Adapter,
    scope: Mapping[str, str],
    *,
    page_size: int = 100,
    check_deleted: bool = True,
) -> SyncReport:
    """Compare the store with the bindings; record every difference (see module docstring)."""
    guard, store = adapter._guard, adapter._guard.wall.store
    seen: set[str] = set()
    unbound: list[str] = []
    drifted: list[str] = []
    for page in _pages(adapter, scope, page_size):
        known = store.bindings_by_store_id(adapter.store, [i.store_id for i in page])
        for item in page:
            seen.add(item.store_id)
            binding = known.get(item.store_id)
            if binding is None:
                unbound.append(item.store_id)
            elif (
                binding.state == BindingState.WRITTEN
                and item.content_hash != binding.content_hash
                and binding.content_hash not in item.upgradable_hashes  # upgraded, not drift
            ):
                drifted.append(item.store_id)
        guard.resolve_items(page)  # records the unbound and the drifted
    conflicts = adapter.call("conflicts", partial(adapter._backend.store_conflicts, scope))
    deleted: list[str] = []
    if check_deleted:
        after: str | None = None
        while True:
            bindings = store.list_bindings(adapter.store, after=after, limit=1000)
            if not bindings:
                break
            for binding in bindings:
                live = binding.state in (BindingState.WRITTEN, BindingState.DRIFTED)
                sid = binding.store_id
                # not walked: outside the scope, or gone; ask the store about this one item
                if (
                    live
                    and sid is not None
                    and sid not in seen
                    and not adapter._backend.derived(sid)
                    and _missing(adapter, sid)
                ):
                    guard.retire(
                        binding,
                        BindingState.DELETED,
                        f"{adapter.store} item {sid} was deleted around the firewall",
                    )
                    deleted.append(sid)
            after = bindings[-1].belief_id
    return SyncReport(len(seen), tuple(unbound), tuple(drifted), tuple(deleted), conflicts)


def _missing(adapter: Adapter, store_id: str) -> bool:
    return adapter.call("get", partial(adapter._backend.get, store_id)) is None


def _pages(adapter: Adapter, scope: Mapping[str, str], size: int) -> Iterator[list[StoreItem]]:
    cursor: str | None = None
    while True:
        page = adapter.call(
            "list", partial(adapter._backend.list_page, scope=scope, cursor=cursor, limit=size)
        )
        if page.items:
            yield page.items
        if page.cursor is None or not page.items:
            return
        cursor = page.cursor


__all__ = [
    "ImportReport",
    "SyncReport",
    "export_bindings",
    "export_store",
    "import_items",
    "import_store",
    "sync_store",
]
