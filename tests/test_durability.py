"""Durability and concurrency with real processes: ``kill -9`` and several writers.

* A writer subprocess commits in a loop and prints each acknowledged seq (after ``commit``
  returned). The parent SIGKILLs it at a random moment, reopens the store, and checks that every
  acknowledged seq is there and the chain verifies. For the NDJSON file log the kill may leave a
  torn last write, which the reopen must recover and report.
* Several writer processes append to one NDJSON log at once: one gap-free, valid chain, every
  commit of every writer in it. (SQLite's multi-writer test is in ``test_store_sqlite.py``.)
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gnomon.firewall.store.ndjson_file import TORN_KIND
from gnomon.firewall.store.registry import open_store

REPO = Path(__file__).resolve().parent.parent

WRITER = """
import sys
from datetime import UTC, datetime
from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.store.registry import open_store
from tests.factories import make_belief

url, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(url)
print("ready", flush=True)
for i in range(count):
    drafts = [
        EventDraft(
            kind="test.write", actor=tag, at=datetime.now(UTC), data={"i": i, "pad": "x" * 2000}
        ),
        EventDraft(
            kind="belief.upsert", actor=tag, at=datetime.now(UTC),
            records=Records(beliefs=(make_belief(id=f"bel_{tag}_{i}"),)),
        ),
    ]
    events = store.commit(drafts)
    print(events[-1].seq, flush=True)
store.close()
"""


def _writer(url: str, tag: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, tag, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )


def _kill_after_random_acks(url: str, seed: int) -> list[int]:
    rng = random.Random(seed)
    proc = _writer(url, f"w{seed}", 100_000)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    acked: list[int] = []
    stop_after = rng.randint(5, 60)
    while len(acked) < stop_after:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "writer exited"
        acked.append(int(line))
    time.sleep(rng.random() * 0.01)  # land somewhere inside a later commit
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate()  # waits, reads and closes both pipes
    # anything it printed before dying was acknowledged too
    acked.extend(int(x) for x in out.split())
    return acked


@pytest.mark.parametrize("backend", ["sqlite", "ndjson"])
def test_acknowledged_events_survive_kill_9(tmp_path: Path, backend: str) -> None:
    scheme = "sqlite" if backend == "sqlite" else "memory"
    url = f"{scheme}:///{tmp_path / ('gnomon.db' if backend == 'sqlite' else 'log.ndjson')}"
    for seed in range(3):
        acked = _kill_after_random_acks(url, seed)
        with open_store(url) as store:
            head = store.head()[0]
            assert acked and max(acked) <= head, (acked[-3:], head)
            seqs = {e.seq for e in store.events()}
            assert set(acked) <= seqs
            assert store.verify().ok
            for event in store.events(after=acked[-1]):  # never half a commit
                assert event.kind in ("test.write", "belief.upsert", TORN_KIND)


def test_torn_write_after_kill_is_recovered_and_reported(tmp_path: Path) -> None:
    """Kill a writer in the middle of a large write often enough to tear one, then reopen."""
    path = tmp_path / "log.ndjson"
    url = f"memory:///{path}"
    for seed in range(5):
        _kill_after_random_acks(url, 100 + seed)
        with open_store(url) as store:
            assert store.verify().ok
    # whether or not a kill tore a line, a torn tail is recovered the same way:
    torn = b'{"body":"{\\"actor'
    with path.open("ab") as handle:
        handle.write(torn)
    with open_store(url) as store:
        notices = getattr(store, "notices", [])
        assert len(notices) == 1 and notices[0].length == len(torn)
        assert list(store.events())[-1].kind == TORN_KIND
        assert store.verify().ok


def test_several_processes_append_to_one_ndjson_log(tmp_path: Path) -> None:
    url = f"memory:///{tmp_path / 'shared.ndjson'}"
    open_store(url).close()  # create the file (and its header) once
    writers = [_writer(url, f"p{i}", 25) for i in range(4)]
    outputs = [w.communicate(timeout=120) for w in writers]
    for proc, (out, err) in zip(writers, outputs, strict=True):
        assert proc.returncode == 0, err
        assert len(out.split()) == 26  # "ready" and 25 acknowledged seqs
    with open_store(url) as store:
        report = store.verify()
        assert report.ok and report.events == 4 * 25 * 2
        assert [e.seq for e in store.events()] == list(range(1, 201))
        by_writer: dict[str, int] = {}
        for event in store.events():
            by_writer[event.actor] = by_writer.get(event.actor, 0) + 1
        assert by_writer == {f"p{i}": 50 for i in range(4)}
        assert len(store.get_beliefs([f"bel_p{i}_{j}" for i in range(4) for j in range(25)])) == 100
