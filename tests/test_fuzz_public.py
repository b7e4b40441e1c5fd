"""Fuzz every public entry: whatever a caller passes, only a ``GnomonError`` may come out.

Each test draws, for every argument of one public entry, either a well-formed value or a hostile
one (wrong types, lone surrogates, naive datetimes, enum values as plain strings, huge numbers,
NaN, deep or self-referencing containers, arbitrary objects) and calls the entry. A refusal must
be a :class:`~firewall.model.errors.GnomonError` subclass; anything else (``TypeError``,
``ValidationError``, ``UnicodeEncodeError``, ``RecursionError``...) is a bug. No other exception
is documented for these entries.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gnomon import firewall
from gnomon.firewall import ContextPolicy, Origin
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.model.errors import GnomonError
from gnomon.firewall.model.states import Axis, EvidenceRelation, Sensitivity, TruthStatus

FUZZ = settings(
    max_examples=int(os.environ.get("GNOMON_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text that includes lone surrogates, controls, bidi and every other category.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40)
NAIVE = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
AWARE = st.datetimes(
    timezones=st.just(UTC), min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)
)
ENUM_STRINGS = st.sampled_from(
    ["internal", "secret", "supports", "contradicts", "user", "auditor", "truth", "supported"]
)


def _cyclic() -> Any:
    loop: list[Any] = []
    loop.append(loop)
    return loop


HOSTILE: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    ANY_TEXT,
    st.binary(max_size=20),
    NAIVE,
    AWARE,
    ENUM_STRINGS,
    st.lists(ANY_TEXT, max_size=3),
    st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=3),
    st.builds(object),
    st.just(_cyclic()),
    st.just(Origin.external("web:x")),
    st.just(Sensitivity.SECRET),
    st.just(timedelta(days=-1)),
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value most of the time, so that calls get past the first check."""
    return st.one_of(valid, valid, HOSTILE)


def call(entry: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    with contextlib.suppress(GnomonError):
        entry(**kwargs)


Entries = dict[str, tuple[Callable[..., Any], st.SearchStrategy[dict[str, Any]]]]


def fuzz_entries(entries: Entries) -> None:
    """Fuzz several entries in one hypothesis run: draw an entry, then its arguments."""

    @FUZZ
    @given(st.sampled_from(sorted(entries)).flatmap(lambda n: st.tuples(st.just(n), entries[n][1])))
    def run(drawn: tuple[str, dict[str, Any]]) -> None:
        name, kwargs = drawn
        call(entries[name][0], kwargs)

    run()


@pytest.fixture
def wall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[firewall.Firewall]:
    monkeypatch.chdir(tmp_path)  # anything a fuzzed path creates stays here
    with firewall.open("memory://") as w:
        yield w


@pytest.fixture
def session(wall: firewall.Firewall) -> Iterator[Any]:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        yield s


def _ids(session: Any) -> dict[str, str]:
    seen = session.observe(tool="read_file", content="the deploy notes")
    belief = seen.content[0]
    decision = session.decide("go", [belief.id], policy="reference")
    action = session.act(decision.id, "deploy")
    return {
        "belief": belief.id,
        "observation": seen.observation.id,
        "decision": decision.id,
        "action": action.id,
    }


TEXT = st.sampled_from(["deploy notes", "x"])


def test_observe(session: Any) -> None:
    @FUZZ
    @given(
        st.fixed_dictionaries(
            {
                "tool": maybe(st.just("read_file")),
                "content": maybe(TEXT),
            },
            optional={
                "args": maybe(st.just({"path": "a"})),
                "sensitivity": maybe(st.just(Sensitivity.INTERNAL)),
                "invocation_id": maybe(st.just("inv-1")),
                "subject": maybe(st.just("gecko")),
                "predicate": maybe(st.just("window")),
                "expires_at": maybe(AWARE),
                "valid_from": maybe(AWARE),
                "valid_to": maybe(AWARE),
                "tool_version": maybe(st.just("1.0")),
                "origin": HOSTILE,
            },
        )
    )
    def run(kwargs: dict[str, Any]) -> None:
        call(session.observe, kwargs)

    run()


def test_remember(session: Any) -> None:
    ids = _ids(session)

    @FUZZ
    @given(
        st.fixed_dictionaries(
            {"statement": maybe(TEXT)},
            optional={
                "derived_from": maybe(st.just([ids["belief"]])),
                "subject": maybe(st.just("gecko")),
                "predicate": maybe(st.just("window")),
                "sensitivity": maybe(st.just(Sensitivity.INTERNAL)),
                "contradicts": maybe(st.just([ids["belief"]])),
                "expires_at": maybe(AWARE),
                "valid_from": maybe(AWARE),
                "valid_to": maybe(AWARE),
            },
        )
    )
    def run(kwargs: dict[str, Any]) -> None:
        call(session.remember, kwargs)

    run()


def test_recall_decide_act_outcome_corroborate(session: Any) -> None:
    ids = _ids(session)
    entries: Entries = {
        "recall": (
            session.recall,
            st.fixed_dictionaries(
                {"query": maybe(TEXT)},
                optional={"policy": maybe(st.just("default")), "k": maybe(st.just(5))},
            ),
        ),
        "decide": (
            session.decide,
            st.fixed_dictionaries(
                {"summary": maybe(TEXT), "depends_on": maybe(st.just([ids["belief"]]))},
                optional={"policy": maybe(st.just("reference"))},
            ),
        ),
        "act": (
            session.act,
            st.fixed_dictionaries(
                {"decision_id": maybe(st.just(ids["decision"])), "name": maybe(st.just("ship"))},
                optional={"args": maybe(st.just({"a": 1}))},
            ),
        ),
        "record_outcome": (
            session.record_outcome,
            st.fixed_dictionaries(
                {"action_id": maybe(st.just(ids["action"])), "success": maybe(st.booleans())},
                optional={"summary": maybe(TEXT)},
            ),
        ),
        "corroborate": (
            session.corroborate,
            st.fixed_dictionaries(
                {
                    "belief_id": maybe(st.just(ids["belief"])),
                    "observed": maybe(st.just(ids["observation"])),
                },
                optional={
                    "relation": maybe(st.just(EvidenceRelation.SUPPORTS)),
                    "action_id": maybe(st.just(ids["action"])),
                    "required": maybe(st.just(1)),
                },
            ),
        ),
    }

    fuzz_entries(entries)


def test_firewall_host_entries(wall: firewall.Firewall) -> None:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        ids = _ids(s)
    auditor = wall.grant("auditor", "sec")
    user = wall.grant("user", "alice", beliefs=[ids["belief"]])
    items = st.lists(
        st.builds(
            ImportItem,
            text=maybe(TEXT),
            source_id=maybe(st.just("m1")),
            created_at=maybe(AWARE),
            sensitivity=maybe(st.just(Sensitivity.INTERNAL)),
        ),
        max_size=2,
    )
    entries: Entries = {
        "session": (
            lambda **kw: wall.session(**kw).__enter__(),
            st.fixed_dictionaries(
                {"project": maybe(st.just("shop")), "actor": maybe(st.just("coder"))},
                optional={
                    "user": maybe(st.just("alice")),
                    "model_id": maybe(st.just("m")),
                    "prompt_id": maybe(st.just("p")),
                    "tool_version": maybe(st.just("1")),
                },
            ),
        ),
        "grant": (
            wall.grant,
            st.fixed_dictionaries(
                {"authority": maybe(st.just("user")), "subject": maybe(st.just("alice"))},
                optional={"ttl": maybe(st.just(timedelta(minutes=5)))},
            ),
        ),
        "transition": (
            wall.transition,
            st.fixed_dictionaries(
                {
                    "belief_id": maybe(st.just(ids["belief"])),
                    "moves": maybe(st.just([Move(Axis.TRUTH, TruthStatus.SUPPORTED)])),
                    "reason": maybe(st.just("checked")),
                },
                optional={"grant": maybe(st.just(user)), "authority": HOSTILE, "kind": HOSTILE},
            ),
        ),
        "audit": (
            wall.audit,
            st.fixed_dictionaries(
                {"grant": maybe(st.just(auditor))},
                optional={
                    "query": maybe(TEXT),
                    "project": maybe(st.just("shop")),
                    "limit": maybe(st.just(5)),
                },
            ),
        ),
        "import_records": (
            wall.import_records,
            st.fixed_dictionaries(
                {
                    "items": maybe(items),
                    "store_name": maybe(st.just("mem0")),
                    "project": maybe(st.just("shop")),
                },
                optional={
                    "actor": maybe(st.just("importer")),
                    "batch_size": maybe(st.just(10)),
                    "bind": maybe(st.booleans()),
                },
            ),
        ),
    }

    fuzz_entries(entries)


@FUZZ
@given(url=HOSTILE, envelope_args=maybe(st.just(("path",))), max_block_bytes=maybe(st.just(10)))
def test_open(url: Any, envelope_args: Any, max_block_bytes: Any) -> None:
    if isinstance(url, str) and "://" in url and not url.startswith("memory"):
        url = "bogus" + url  # never create files or connect anywhere
    with contextlib.suppress(GnomonError):
        firewall.open(url, envelope_args=envelope_args, max_block_bytes=max_block_bytes).close()


@FUZZ
@given(text=st.one_of(HOSTILE, st.text(st.characters(codec=None), max_size=200)))
def test_policy_from_yaml_text(text: Any) -> None:
    call(ContextPolicy.from_yaml_text, {"text": text})


@FUZZ
@given(
    data=st.one_of(
        HOSTILE, st.dictionaries(st.sampled_from(["name", "truth", "quote", "x"]), HOSTILE)
    )
)
@example(data={"name": None, "truth": "\ud800"})  # a lone surrogate in a bare-string state list
def test_policy_from_mapping(data: Any) -> None:
    call(ContextPolicy.from_mapping, {"data": data})


@FUZZ
@given(path=HOSTILE)
def test_policy_from_yaml(path: Any) -> None:
    if isinstance(path, str | bytes):
        path = Path("/nonexistent") / str(path)[:50]
    call(ContextPolicy.from_yaml, {"path": path})


@FUZZ
@given(
    name=st.sampled_from(["user", "tool", "external", "agent", "probe", "imported"]), value=HOSTILE
)
def test_origin_constructors(name: str, value: Any) -> None:
    call(
        getattr(Origin, name),
        {next(iter(inspect.signature(getattr(Origin, name)).parameters)): value},
    )


@FUZZ
@given(labels=st.lists(st.one_of(st.just(Origin.user("a")), HOSTILE), max_size=3))
def test_origin_join(labels: list[Any]) -> None:
    with contextlib.suppress(GnomonError):
        Origin.join(*labels)


def test_adapter_write_and_search(wall: firewall.Firewall) -> None:
    from gnomon.adapters.local import GuardedLocalMemory, LocalMemory

    memory = GuardedLocalMemory(LocalMemory(), wall, project="shop", user="alice")
    fuzz_entries(
        {
            "add": (
                memory.add,
                st.fixed_dictionaries(
                    {"text": maybe(TEXT)},
                    optional={
                        "user_id": maybe(st.just("alice")),
                        "metadata": maybe(st.just({"k": "v"})),
                    },
                ),
            ),
            "search": (
                memory.search,
                st.fixed_dictionaries(
                    {"query": maybe(TEXT)}, optional={"top_k": maybe(st.just(3))}
                ),
            ),
        }
    )
