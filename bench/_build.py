"""Building a benchmark's cached SQLite store: beside its final path, moved in place when done.

Like ``_common``, imported by path by the ``bench/*.py`` scripts; kept apart so that the
benchmarks that build no store do not import the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.store.sealing import file_identity, forget_keys, store_key_path
from gnomon.firewall.store.sqlite import SQLiteStore


def building_store(path: Path) -> tuple[Path, SQLiteStore]:
    """A fresh store at ``path`` + ``.building`` (any leftover of an interrupted build removed),
    sealed with the key the store at ``path`` is opened with once it is moved there (the keys
    of an earlier build at ``path`` are forgotten: this is a new store, not a truncated one)."""
    tmp = path.with_suffix(".building")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    identity = file_identity(path)
    forget_keys(identity)
    return tmp, SQLiteStore(tmp, cache_mb=256, seal_key=store_key_path(identity))


def commit_beliefs(
    store: SQLiteStore,
    beliefs: Sequence[Belief],
    *,
    at: datetime,
    project: str,
    per_event: int,
    per_commit: int,
) -> None:
    """Commit ``beliefs`` directly, ``per_event`` to an event and ``per_commit`` events a commit."""
    drafts = [
        EventDraft(
            kind="bench.beliefs",
            actor="bench",
            at=at,
            project=project,
            versions={"package": "bench", "schema": 1, "gate": "1"},
            records=Records(beliefs=tuple(beliefs[i : i + per_event])),
        )
        for i in range(0, len(beliefs), per_event)
    ]
    for i in range(0, len(drafts), per_commit):
        store.commit(drafts[i : i + per_commit])


def move_into_place(tmp: Path, path: Path) -> None:
    """Rename the built (closed) store and its WAL files from ``tmp`` to ``path``."""
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{tmp}{suffix}")
        if src.exists():
            src.rename(Path(f"{path}{suffix}"))
