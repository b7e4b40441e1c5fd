"""NDJSON export / import, bad input naming the line and seq, and the ``memory:///file`` log."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest

from gnomon.firewall.audit.rebuild import snapshot
from gnomon.firewall.log.ndjson import (
    export_to_file,
    header_line,
    parse,
    read_events,
)
from gnomon.firewall.model.errors import LogFormatError, LogIntegrityError
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.ndjson_file import TORN_KIND, FileLogStore
from gnomon.firewall.store.registry import open_store
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import belief_draft, make_belief, make_draft
from tests.log_contract import populated_source


@pytest.fixture
def source() -> MemoryStore:
    return populated_source()


def export(store: MemoryStore, path: Path) -> bytes:
    export_to_file(store.chain_rows(), path)
    return path.read_bytes()


def test_export_round_trips_exact_bytes(source: MemoryStore, tmp_path: Path) -> None:
    data = export(source, tmp_path / "log.ndjson")
    lines = data.splitlines()
    assert lines[0] == header_line().rstrip(b"\n")
    assert len(lines) == source.head()[0] + 1
    first = orjson.loads(lines[1])
    assert set(first) == {"seq", "prev_hash", "hash", "body"}
    events = read_events(data, "log.ndjson")
    assert [e.body for e in events] == [e.body for e in source.events()]
    target = SQLiteStore(tmp_path / "copy.db")
    target.append_sealed(events)
    assert target.head() == source.head() and target.verify().ok
    assert snapshot(target) == snapshot(source)
    target.close()


def test_unicode_bodies_survive(tmp_path: Path) -> None:
    store = MemoryStore()
    store.commit([belief_draft(make_belief(statement='Le café "crème" \\ ☕ \u2028 done'))])
    events = read_events(export(store, tmp_path / "u.ndjson"), "u")
    assert events[0].body == next(store.events()).body


def test_import_is_idempotent_and_continues_the_head(source: MemoryStore, tmp_path: Path) -> None:
    data = export(source, tmp_path / "log.ndjson")
    target = MemoryStore()
    target.append_sealed(read_events(data, "f"))
    assert read_events(data, "f", head=target.head()) == []  # everything already there
    target.commit([make_draft()])
    more = export(target, tmp_path / "more.ndjson")  # a longer log that starts the same way
    again = MemoryStore()
    again.append_sealed(read_events(data, "f"))
    new = read_events(more, "more", head=again.head())
    assert [e.seq for e in new] == [target.head()[0]]
    again.append_sealed(new)
    assert again.head() == target.head()


def test_import_refuses_a_different_log(source: MemoryStore, tmp_path: Path) -> None:
    data = export(source, tmp_path / "log.ndjson")
    other = MemoryStore()
    other.commit([make_draft(data={"other": True})])
    with pytest.raises(LogFormatError, match="does not continue the target log"):
        read_events(data, "f", head=other.head())
    longer = MemoryStore()
    longer.append_sealed(list(source.events()))
    longer.commit([make_draft(), make_draft()])
    with pytest.raises(LogFormatError, match="before the target log's head"):
        read_events(data, "f", head=longer.head())


def _lines(source: MemoryStore, tmp_path: Path) -> list[bytes]:
    return export(source, tmp_path / "log.ndjson").splitlines(keepends=True)


def _fails(data: bytes, *fragments: str) -> LogFormatError:
    with pytest.raises(LogFormatError) as err:
        read_events(data, "bad.ndjson")
    message = str(err.value)
    assert message.startswith("bad.ndjson line "), message
    for fragment in fragments:
        assert fragment in message, message
    return err.value


def test_edited_line(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    lines[3] = (
        lines[3].replace(b"test.note", b"test.nope").replace(b"belief.upsert", b"belief.upsery")
    )
    doc = orjson.loads(lines[3])
    doc["body"] = doc["body"].replace("agent", "agenT", 1)
    lines[3] = orjson.dumps(doc) + b"\n"
    err = _fails(b"".join(lines), "line 4", "seq 3", "hash does not match")
    assert err.seq == 3 and isinstance(err, LogIntegrityError)


def test_truncated_file(source: MemoryStore, tmp_path: Path) -> None:
    data = b"".join(_lines(source, tmp_path))
    _fails(data[:-20], "incomplete", "truncated")


def test_missing_line(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    del lines[2]
    _fails(b"".join(lines), "expected seq 2, found 3")


def test_invalid_utf8(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    lines[2] = lines[2].replace(b"agent", b"ag\xffnt", 1)
    _fails(b"".join(lines), "line 3", "not valid UTF-8")


def test_not_json(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    lines[2] = b'{"seq": 2, "body": \n'
    _fails(b"".join(lines), "line 3", "not a JSON document")


def test_unknown_schema_version(tmp_path: Path) -> None:
    store = MemoryStore()
    store.commit([make_draft()])
    ((_, body, prev, digest),) = store.chain_rows()
    future = body.replace(b'"schema":1', b'"schema":99')
    from gnomon.firewall.log.events import chain_hash
    from gnomon.firewall.log.ndjson import encode_line

    data = header_line() + encode_line(1, prev, chain_hash(1, prev, future), future)
    _fails(data, "line 2", "seq 1", "unknown event schema version 99")
    del digest


def test_body_without_a_required_field(tmp_path: Path) -> None:
    """A hand-made body with a known schema and a good hash, but no ``kind``: a typed error."""
    store = MemoryStore()
    store.commit([make_draft()])
    ((_, body, prev, _digest),) = store.chain_rows()
    doc = orjson.loads(body)
    del doc["kind"]
    kindless = orjson.dumps(doc)
    from gnomon.firewall.log.events import chain_hash
    from gnomon.firewall.log.ndjson import encode_line

    data = header_line() + encode_line(1, prev, chain_hash(1, prev, kindless), kindless)
    _fails(data, "line 2", "seq 1", "the event body has no 'kind'")


def test_unknown_format_version(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    lines[0] = b'{"format":"gnomon.events","schema":1,"version":7}\n'
    _fails(b"".join(lines), "line 1", "unknown log format version 7")
    lines[0] = b'{"format":"something.else"}\n'
    _fails(b"".join(lines), "not a Gnomon event log")


def test_wrong_keys_and_types(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    doc = orjson.loads(lines[1])
    for broken, fragment in (
        ({**doc, "extra": 1}, "keys are wrong"),
        ({**doc, "hash": "XYZ"}, "64 lowercase hex"),
        ({**doc, "body": 5}, "'body' must be a string"),
        ({**doc, "seq": "1"}, "not an event line"),
    ):
        copy = list(lines)
        copy[1] = orjson.dumps(broken) + b"\n"
        _fails(b"".join(copy), "line 2", fragment)


def test_headerless_and_empty_files(source: MemoryStore, tmp_path: Path) -> None:
    lines = _lines(source, tmp_path)
    assert len(read_events(b"".join(lines[1:]), "f")) == source.head()[0]
    assert read_events(b"", "f") == [] and read_events(header_line(), "f") == []
    _fails(lines[0] + b"\n" + b"".join(lines[1:]), "empty line")


def test_failed_import_imports_nothing(source: MemoryStore, tmp_path: Path) -> None:
    """All or nothing: the last line is bad, so none of the good ones before it land."""
    lines = _lines(source, tmp_path)
    lines[-1] = lines[-1].replace(b'"hash":"', b'"hash":"0', 1)[:-2] + b'"}\n'
    target = SQLiteStore(tmp_path / "t.db")
    with pytest.raises(LogFormatError):
        target.append_sealed(read_events(b"".join(lines), "f", head=target.head()))
    assert target.head()[0] == 0
    target.close()


# -- the NDJSON file as the memory store's log ------------------------------------------------


def test_file_log_persists_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "log.ndjson"
    belief = make_belief()
    with open_store(f"memory:///{path}") as store:
        assert isinstance(store, FileLogStore)
        store.commit([belief_draft(belief), make_draft()])
        head = store.head()
    assert path.read_bytes().startswith(header_line())
    with open_store(f"memory:///{path}") as store:
        assert store.head() == head
        assert store.get_belief(belief.id) == belief
        assert store.verify().ok
    # the file is an export: import reads it as it is
    assert len(read_events(path.read_bytes(), str(path))) == 2


def test_file_log_keeps_imported_events(source: MemoryStore, tmp_path: Path) -> None:
    """Events appended sealed (``gnomon log import`` into a ``memory:///file`` store) are in
    the file: a reopen replays them and the file reads back as the same export."""
    path = tmp_path / "log.ndjson"
    events = list(source.events())
    with open_store(f"memory:///{path}") as store:
        store.append_sealed(events)
        head = store.head()
    with open_store(f"memory:///{path}") as store:
        assert store.head() == head == source.head()
        assert snapshot(store) == snapshot(source)
    assert [e.hash for e in read_events(path.read_bytes(), str(path))] == [e.hash for e in events]


def test_file_log_sees_other_writers(tmp_path: Path) -> None:
    path = tmp_path / "log.ndjson"
    a, b = FileLogStore(path), FileLogStore(path)
    a.commit([make_draft(data={"by": "a"})])
    b.commit([belief_draft(make_belief(id="bel_b"))])  # b catches up on a's event first
    a.commit([make_draft(data={"by": "a2"})])
    assert a.head() == b.head() and a.head()[0] == 3
    b.refresh()
    assert b.get_belief("bel_b") is not None and a.get_belief("bel_b") is not None
    assert [e.seq for e in b.events()] == [1, 2, 3]
    a.close()
    b.close()


def test_a_commit_pinned_to_a_head_sees_other_writers(tmp_path: Path) -> None:
    """Two processes on one file log: a head ``b`` read before ``a`` appended is stale, so b's
    pinned commit lands nothing (b catches up under the file lock before it decides)."""
    path = tmp_path / "log.ndjson"
    a, b = FileLogStore(path), FileLogStore(path)
    a.commit([make_draft()])
    seen = b.head()[0]
    a.commit([make_draft(data={"by": "a"})])
    assert b.commit_if_head([make_draft(data={"by": "b"})], seen) is None
    assert b.commit_if_head([make_draft(data={"by": "b"})], seen + 1) is not None
    a.refresh()
    assert [e.payload.get("by") for e in a.events()] == [None, "a", "b"]
    a.close()
    b.close()


def test_torn_last_line_is_recovered_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "log.ndjson"
    with FileLogStore(path) as store:
        store.commit([make_draft(), make_draft(data={"x": 1})])
    good = path.read_bytes()
    partial = b'{"body":"{\\"actor\\":\\"agent\\",\\"at\\":\\"2025'
    path.write_bytes(good + partial)
    with caplog.at_level(logging.WARNING, logger="gnomon.store"):
        store = FileLogStore(path)
    (notice,) = store.notices
    assert notice.length == len(partial) and notice.offset == len(good)
    assert Path(notice.saved_to).read_bytes() == partial
    assert "torn last write" in caplog.text
    recovered = list(store.events())[-1]
    assert recovered.kind == TORN_KIND and recovered.payload["bytes"] == len(partial)
    assert store.head()[0] == 3 and store.verify().ok
    store.commit([make_draft()])
    store.close()
    with FileLogStore(path) as again:
        assert again.notices == [] and again.head()[0] == 4


def test_torn_commit_is_cut_back_to_the_last_whole_commit(tmp_path: Path) -> None:
    """A crash between the lines of one commit: the complete lines of it are cut off too."""
    path = tmp_path / "log.ndjson"
    with FileLogStore(path) as store:
        store.commit([make_draft()])
        ends_at = path.stat().st_size
        # a crash mid-write never returns, so the sealed head watermark (advanced only after
        # the write is on disk) stays at the last whole commit: keep it to simulate that
        assert store.seal_key_path is not None
        watermark = Path(store.seal_key_path).with_suffix(".head")
        acknowledged = watermark.read_bytes()
        store.commit(
            [make_draft(data={"i": 1}), make_draft(data={"i": 2}), make_draft(data={"i": 3})]
        )
    watermark.write_bytes(acknowledged)
    data = path.read_bytes()
    second_line_end = data.index(b"\n", data.index(b"\n", ends_at) + 1) + 1
    path.write_bytes(data[: second_line_end + 10])  # 2 of 3 lines whole, the third torn
    with FileLogStore(path) as store:
        (notice,) = store.notices
        assert notice.offset == ends_at
        assert [e.kind for e in store.events()] == ["test.event", TORN_KIND]


def test_corrupt_file_log_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "log.ndjson"
    with FileLogStore(path) as store:
        store.commit([make_draft(), make_draft()])
    data = path.read_bytes().replace(b"agent", b"agenT", 1)
    path.write_bytes(data)
    with pytest.raises(LogFormatError, match=r"line 2 \(seq 1\): hash does not match"):
        FileLogStore(path)
    assert path.read_bytes() == data  # corruption is never "repaired"


def test_file_log_rebuild(tmp_path: Path) -> None:
    with FileLogStore(tmp_path / "log.ndjson") as store:
        store.append_sealed(list(populated_source().events()))
        before = snapshot(store)
        store.rebuild_projections()
        assert snapshot(store) == before


def test_parse_reports_torn_offset() -> None:
    parsed = parse(header_line() + b'{"seq":1', "f")
    assert parsed.torn == len(header_line()) and parsed.lines == [] and parsed.header
